"""Asks lab_sim's /lab_sim/reset for one episode twice, then advances, then asks again
and advances twice, and prints "RESULT <json>": each answer, the sim time each advance
reached and how many tares (/balance/tare, published at every reset done) had arrived
after each answer. It also reads a camera topic with a type lab_sim's writer never matches.
usage: repeated_reset_probe.py"""
from __future__ import annotations

import json
import sys

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("repeated_reset_probe")
    import time

    from geometry_msgs.msg import WrenchStamped
    from labference.srv import Advance, ResetEpisode
    from rclpy.qos import QoSProfile

    from labference_ros.tasks.weighing.instances import generate

    instance = generate("basic", 1, task_seed=2, layout_seed=2, policy_seed=0)[0]
    request = ResetEpisode.Request(episode_id="0000_repeat", instance_json=instance.to_json())

    tares = []
    tare_sub = peer.node.create_subscription(WrenchStamped, "/balance/tare", tares.append, QoSProfile(depth=10))
    # A reader lab_sim's graph shows on a camera topic that its writer can never match (another
    # type): the first advance of each timeline waits for it, match_timeout_s, and says so.
    from std_msgs.msg import String
    peer.node.create_subscription(String, "/cameras/front/image_raw", lambda _m: None, QoSProfile(depth=1))
    matched = time.monotonic() + 60.0
    while not tare_sub.get_publisher_count() and time.monotonic() < matched:
        time.sleep(0.1)

    def reset():
        answer = peer.call(ResetEpisode, "/lab_sim/reset", request)
        settle = time.monotonic() + 2.0  # a tare published by this reset arrives meanwhile
        while time.monotonic() < settle:
            time.sleep(0.1)
        return {"success": answer.success, "message": answer.message, "sim_time": answer.sim_time,
                "scene_hash": answer.scene_hash, "tares": len(tares)}

    out = {"first": reset(), "repeated": reset()}
    advanced = peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.2))
    out["advanced_to"] = advanced.sim_time
    out["after_advance"] = reset()
    advanced = peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.1))
    out["advanced_again_to"] = advanced.sim_time
    advanced = peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.1))  # the same timeline
    out["advanced_further_to"] = advanced.sim_time
    print("RESULT " + json.dumps(out), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
