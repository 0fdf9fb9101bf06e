"""The sensor-only referee beside the privileged one (oracle/sensor_agreement.py) over a
seed list: how often they agree on every first choice, execution outcome and completion,
and what the sensor estimator costs per measurement (forward kinematics included) next
to the privileged referee's own update over the same measurements, as a ratio.

    MUJOCO_GL=egl .venv/bin/python benchmarks/bench_sensor_agreement.py [--instances N]

Markers are the objects' true poses, hidden while the hand holds one (ideal tracking);
every disagreement is printed with the fields that differ.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("MUJOCO_GL", "egl")

from labference_ros.oracle.sensor_agreement import run_with_shadow  # noqa: E402
from labference_ros.tasks.weighing.instances import generate  # noqa: E402

SYSTEMS = ("scripted_expert", "display_reader", "fixed_preference")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", type=int, default=3, help="instances per condition (basic and extended)")
    ap.add_argument("--max-s", type=float, default=60.0, help="sim-time deadline per episode")
    args = ap.parse_args()
    instances = (generate("basic", args.instances, task_seed=1, layout_seed=100, policy_seed=0)
                 + generate("extended", args.instances, task_seed=3, layout_seed=103, policy_seed=0))
    agreed = total = frames = 0
    estimate_s = referee_s = 0.0
    for system in SYSTEMS:
        for instance in instances:
            result = run_with_shadow(system, instance, max_s=args.max_s)
            total += 1
            agreed += result.agrees
            frames += result.frames
            estimate_s += result.estimate_s
            referee_s += result.referee_s
            print(f"{system:17s} {instance.instance_id:16s} {'agree' if result.agrees else 'DIFFER'} "
                  f"({result.privileged['completion_class']}, {result.frames} measurements)")
            for line in result.differences:
                print(f"    {line}")
    print(f"agreement: {agreed}/{total} episodes ({agreed / total:.3f})")
    print(f"sensor estimator {estimate_s / frames * 1e6:.0f} us per measurement, privileged referee "
          f"{referee_s / frames * 1e6:.0f} us over the same {frames} measurements: ratio "
          f"{estimate_s / referee_s:.2f}")


if __name__ == "__main__":
    main()
