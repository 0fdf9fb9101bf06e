"""The rehearsal graph (weighing_rehearsal.launch.py) over a seed list: how often the
sensor-only referee agrees with the shadow referee episode by episode (labference
agreement's comparison), what world_estimator spends per estimated frame (its own count,
said when it stops), and the graph's wall time per sim second.

    MUJOCO_GL=egl .venv/bin/python benchmarks/bench_rehearsal.py [--episodes N] [--condition basic]

Each system runs one launch of N episodes in its own ROS domain (claimed by the launch);
every disagreement is printed with the fields that differ.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labference_ros.reporting.agreement import compare_run

SYSTEMS = ("scripted_expert", "display_reader", "fixed_preference")
ESTIMATED = re.compile(r"estimated (\d+) frames, (\d+) us per frame")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=2, help="episodes per system")
    ap.add_argument("--condition", default="basic", choices=("basic", "extended"))
    ap.add_argument("--seed", type=int, default=10)
    args = ap.parse_args()
    labference = os.path.join(os.path.dirname(sys.executable), "labference")
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a free domain
    env.setdefault("MUJOCO_GL", "egl")
    agreed = total = frames = 0
    estimate_us = 0.0
    wall = sim = 0.0
    with tempfile.TemporaryDirectory(prefix="bench_rehearsal_") as tmp:
        for system in SYSTEMS:
            run_dir = Path(tmp) / system
            started = time.monotonic()
            done = subprocess.run([labference, "launch", "weighing_rehearsal.launch.py", f"episodes:={args.episodes}",
                                   f"system:={system}", f"condition:={args.condition}", f"seed:={args.seed}",
                                   "record:=false", f"output_dir:={run_dir}"], env=env, capture_output=True,
                                  text=True)
            wall += time.monotonic() - started
            if done.returncode not in (0, 3):
                print(f"{system}: launch exit {done.returncode}\n{done.stdout[-3000:]}")
                continue
            for match in ESTIMATED.finditer(done.stdout):
                frames += int(match.group(1))
                estimate_us += int(match.group(1)) * int(match.group(2))
            summary = json.loads((run_dir / "summary.json").read_text())
            sim += sum(row.get("sim_s") or 0.0 for row in summary["per_episode"])
            for episode in compare_run(run_dir):
                total += 1
                agreed += episode.agrees
                state = "agrees" if episode.agrees else f"differs: {episode.problem or episode.differences}"
                print(f"{system} {episode.episode}: {state}")
    print(f"agreement {agreed}/{total} episodes ({args.condition}, seed {args.seed}, {args.episodes} per system)")
    if frames:
        print(f"world_estimator {estimate_us / frames:.0f} us per estimated frame over {frames} frames")
    if sim:
        print(f"graph wall {wall:.1f} s for {sim:.1f} s sim: {wall / sim:.2f} wall s per sim s "
              "(launch start-up included; realtime_factor 0.5)")


if __name__ == "__main__":
    main()
