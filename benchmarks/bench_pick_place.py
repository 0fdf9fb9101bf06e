"""Success rate and cost of the scripted pick-and-place over layout seeds.

For each seed: load, move all four standards onto the pan (random order),
then take one back to its table spot; success = object resting upright where
asked with no finger contact, and the final balance reading right.

    MUJOCO_GL=egl .venv/bin/python benchmarks/bench_pick_place.py --seeds 20
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from labference_ros.sim.mujoco_backend import MujocoBackend  # noqa: E402
from labference_ros.skills.motion import PickPlacePlanner, PlanningError, execute_plan  # noqa: E402
from labference_ros.tasks.weighing.moves import plan_to_pan, plan_to_table  # noqa: E402
from labference_ros.core.balance import BalanceModel, BalanceParameters  # noqa: E402
from labference_ros.tasks.weighing.instance import WeighingInstance  # noqa: E402
from labference_ros.tasks.weighing.layout import generate_layout, pan_slot  # noqa: E402
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G, STANDARDS  # noqa: E402


def resting_at(obj, support, xy) -> bool:
    w, x, y, z = obj.orientation
    return (support in obj.contacts and "left_finger" not in obj.contacts
            and "right_finger" not in obj.contacts and 1 - 2 * (x * x + y * y) > 0.99
            and math.hypot(obj.position[0] - xy[0], obj.position[1] - xy[1]) < 0.01)


def settle_reading(b, balance, seconds=2.0):
    r = None
    for _ in range(int(seconds / 0.01)):
        b.advance(0.01)
        w = b.pan_wrench()
        r = balance.update(b.sim_time, w.force, w.torque)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=100)
    args = ap.parse_args()
    planner = PickPlacePlanner()
    ok = total = 0
    plan_wall = exec_wall = sim_time = 0.0
    failures = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        rng = random.Random(seed)
        sample = round(rng.uniform(40, 190), 1)
        inst = WeighingInstance(f"pp{seed}", "basic", seed, seed, 0, 200.0, sample,
                                layout=generate_layout(seed))
        b = MujocoBackend()
        b.load(inst)
        balance = BalanceModel(BalanceParameters(), b.gravity)
        balance.calibrate_empty(b.empty_pan_wrench().force_up)
        order = list(STANDARDS)
        rng.shuffle(order)
        moves = [(n, "pan") for n in order] + [(rng.choice(order), "table")]
        on_pan = set()
        for name, where in moves:
            total += 1
            q = b.joint_state().position[:7]
            pos = b.measure().objects[name].position
            t0 = time.perf_counter()
            try:
                if where == "pan":
                    plan, xy = plan_to_pan(planner, q, name, pos, inst.layout["balance"]), pan_slot(
                        name, inst.layout["balance"])
                else:
                    plan, xy = plan_to_table(planner, q, name, pos, inst.layout[name]), inst.layout[name]
            except PlanningError as e:
                failures.append((seed, name, where, str(e)))
                continue
            t1 = time.perf_counter()
            execute_plan(b, plan)
            b.advance(0.5)
            t2 = time.perf_counter()
            plan_wall += t1 - t0
            exec_wall += t2 - t1
            sim_time += plan.duration + 0.5
            if resting_at(b.measure().objects[name], where, xy):
                ok += 1
                (on_pan.add if where == "pan" else on_pan.discard)(name)
            else:
                failures.append((seed, name, where, str(b.measure().objects[name])))
        r = settle_reading(b, balance)
        expect = sample + sum(STANDARD_MASSES_G[n] for n in on_pan)
        if not (r.stable and abs(r.displayed_g - expect) <= 0.1):
            failures.append((seed, "reading", f"{r.displayed_g} vs {expect}", str(r)))
        b.close()
    print(f"pick-and-place: {ok}/{total} succeeded over {args.seeds} layouts")
    print(f"per move: plan {plan_wall / total:.2f} s wall, execute {exec_wall / total:.2f} s wall "
          f"for {sim_time / total:.1f} s sim")
    for f in failures:
        print("FAIL", f)


if __name__ == "__main__":
    main()
