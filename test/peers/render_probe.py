"""Resets a running lab_sim (step_mode realtime) and waits for a front camera frame;
prints "RENDERED <distinct colours> <width>x<height>" or "NO_FRAME"."""
from __future__ import annotations

import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("render_probe")
    from sensor_msgs.msg import Image

    import numpy as np

    from labference.srv import ResetEpisode
    from labference_ros.tasks.weighing.instances import generate

    frames: list[Image] = []
    peer.node.create_subscription(Image, "/cameras/front/image_raw", frames.append, 10)
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    assert peer.call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(instance_json=instance.to_json()),
                     timeout=120).success
    deadline = time.monotonic() + 60
    while not frames and time.monotonic() < deadline:
        time.sleep(0.05)
    if not frames:
        print("NO_FRAME", flush=True)
        return 1
    m = frames[-1]
    pixels = np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width, -1)
    colours = len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0))
    print(f"RENDERED {colours} {m.width}x{m.height}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
