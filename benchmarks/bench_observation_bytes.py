"""What the graph spends per camera frame and per observation on its own bytes, old
way against new, side by side in one run (issue 19):

- a 320x240 frame into sensor_msgs/Image: its bytes given to the constructor (two
  copies: the bytes, then the field's array) against msgconv.image_data assigned to
  the field (one); what a copy costs depends on the allocator's state (a fresh 230 kB
  block may be mapped and faulted in), so this steady loop shows the least of it;
- an observation's payload hash: sha256 of serialize_request (one JSON text of about
  1 MB with three frames in base64) against core.observation.payload_hash (the same
  digest, the base64 streamed into it).

Each pair is timed alternately, the median of --repeats rounds printed with the ratio.

    .venv/bin/python benchmarks/bench_observation_bytes.py [--repeats 7]
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import time

import numpy as np
from sensor_msgs.msg import Image

from labference_ros.core.observation import PolicyObservation, payload_hash, serialize_request
from labference_ros.msgconv import image_data

CAMERAS = ("front", "wrist", "display")
SIZE = (240, 320)


def per_call_us(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    frames = {c: rng.integers(0, 256, (*SIZE, 3), dtype=np.uint8) for c in CAMERAS}
    pixels = frames["front"]

    def image_by_constructor():
        return Image(height=SIZE[0], width=SIZE[1], encoding="rgb8", step=SIZE[1] * 3, data=pixels.tobytes())

    def image_by_field():
        msg = Image(height=SIZE[0], width=SIZE[1], encoding="rgb8", step=SIZE[1] * 3)
        msg.data = image_data(pixels)
        return msg

    obs = PolicyObservation(observation_id="bench:obs00001", episode_id="bench", sim_time=1.0, evidence_version=1,
                            images=frames, image_stamps={c: 1.0 for c in CAMERAS},
                            joint_positions=np.zeros(7), gripper_width=0.08, instruction="weigh the sample",
                            history=(), camera_calibration={}, joint_setpoint=None)
    assert payload_hash(obs) == hashlib.sha256(serialize_request(obs)).hexdigest()
    assert bytes(image_by_field().data) == bytes(image_by_constructor().data)

    pairs = {"Image per 320x240 frame": (image_by_constructor, image_by_field, 200),
             "payload hash per observation (3 frames)": (
                 lambda: hashlib.sha256(serialize_request(obs)).hexdigest(), lambda: payload_hash(obs), 30)}
    for name, (old, new, calls) in pairs.items():
        olds, news = [], []
        for _ in range(a.repeats):
            olds.append(per_call_us(old, calls))
            news.append(per_call_us(new, calls))
        o, n = statistics.median(olds), statistics.median(news)
        print(f"{name}: before {o:8.1f} us, after {n:8.1f} us (medians of {a.repeats}), ratio after/before {n / o:.3f}")


if __name__ == "__main__":
    main()
