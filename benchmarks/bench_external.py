"""The simulator-neutral referee path (weighing_external.launch.py) against lab_sim over a
seed list: how often the referee that scores from simulation_interfaces entity states, the
balance node over the standard wrench and the world estimator agrees with the privileged
shadow referee episode by episode (labference agreement's comparison).

    MUJOCO_GL=egl .venv/bin/python benchmarks/bench_external.py [--episodes N] [--condition basic]

Each system runs one launch of N episodes in its own ROS domain (claimed by the launch);
every disagreement is printed with the fields that differ.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labference_ros.reporting.agreement import compare_run

SYSTEMS = ("scripted_expert", "display_reader", "fixed_preference")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=10, help="episodes per system")
    ap.add_argument("--condition", default="basic", choices=("basic", "extended"))
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated tested systems")
    args = ap.parse_args()
    labference = os.path.join(os.path.dirname(sys.executable), "labference")
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a free domain
    env.setdefault("MUJOCO_GL", "egl")
    agreed = total = 0
    wall = sim = 0.0
    with tempfile.TemporaryDirectory(prefix="bench_external_") as tmp:
        for system in args.systems.split(","):
            run_dir = Path(tmp) / system
            started = time.monotonic()
            done = subprocess.run([labference, "launch", "weighing_external.launch.py", f"episodes:={args.episodes}",
                                   f"system:={system}", f"condition:={args.condition}", f"seed:={args.seed}",
                                   "record:=false", f"output_dir:={run_dir}"], env=env, capture_output=True,
                                  text=True)
            wall += time.monotonic() - started
            if done.returncode not in (0, 3):
                print(f"{system}: launch exit {done.returncode}\n{done.stdout[-3000:]}")
                continue
            summary = json.loads((run_dir / "summary.json").read_text())
            sim += sum(row.get("sim_s") or 0.0 for row in summary["per_episode"])
            for episode in compare_run(run_dir):
                total += 1
                agreed += episode.agrees
                state = "agrees" if episode.agrees else f"differs: {episode.problem or episode.differences}"
                print(f"{system} {episode.episode}: {state}")
    print(f"agreement {agreed}/{total} episodes ({args.condition}, seed {args.seed}, {args.episodes} per system)")
    if sim:
        print(f"graph wall {wall:.1f} s for {sim:.1f} s sim: {wall / sim:.2f} wall s per sim s "
              "(launch start-up included)")


if __name__ == "__main__":
    main()
