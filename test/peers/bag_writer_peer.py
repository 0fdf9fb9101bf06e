"""Writes an episode bag the way the recorder does, for tests that kill the writer.

usage: bag_writer_peer.py BAG_DIR SECONDS
Writes SECONDS of log time (three 320x240 cameras at 10 Hz, balance readings at
50 Hz), printing "AT <seconds>" as log time passes, then "HOLD" and waits
(the bag stays open) until killed.
"""
from __future__ import annotations

import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bag_samples import sample_stream  # noqa: E402

from labference_ros.recording.bag_writer import EpisodeBag  # noqa: E402


def main(bag_dir: str, seconds: float) -> None:
    bag = EpisodeBag(bag_dir, {"episode_id": "ep_killed", "seeds": {"task": 3}})
    last_whole = -1
    for topic, msgtype, t_ns, data in sample_stream(seconds):
        bag.add_topic(topic, msgtype)
        bag.write(topic, t_ns, data)
        whole = int(t_ns // 1_000_000_000)
        if whole != last_whole:
            print(f"AT {whole}", flush=True)
            last_whole = whole
    print("HOLD", flush=True)
    while True:
        time.sleep(1.0)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
