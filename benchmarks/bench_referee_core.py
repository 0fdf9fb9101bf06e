"""Cost of one Referee update per WorldMeasurement (pure Python core).

Builds a full extended-weighing episode from the synthetic world (recovery,
drop, completion), records its measurement stream, then times the referee over
that stream. Prints microseconds per update and, measured in the same run, the
cost of one MuJoCo step of the weighing scene, as a ratio.

    .venv/bin/python benchmarks/bench_referee_core.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time

from labference_ros.tasks.weighing.contract import weighing_extended
from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.tasks.weighing.referee import Referee
from labference_ros.tasks.weighing.synthetic_world import SyntheticWorld


def stream():
    inst = WeighingInstance("bench", "extended", 1, 2, 3, 220.0, 100.0, ("std_50",), ("std_20", "std_100"))
    w = SyntheticWorld(inst, referee=None, dt=0.002)  # 500 Hz like a physics step
    w.keep_measurements = True
    w.run(0.3)
    for obj, where in (("std_10", "pan"), ("std_10", "table"), ("std_50", "table"), ("std_100", "pan"),
                       ("std_20", "floor"), ("std_20", "pan")):
        w.move(obj, where)
    w.run(4.0)
    return inst, w.measurements


def main(repeats: int = 5) -> None:
    inst, ms = stream()
    per_update = []
    for _ in range(repeats):
        ref = Referee(weighing_extended(), inst, "bench")
        t0 = time.perf_counter()
        k = 0
        for i, m in enumerate(ms):
            ref.step(m)
            if i % 50 == 0:  # an observation every 0.1 s of sim time
                k += 1
                ref.deliver_observation(f"obs{k}", m.t)
        per_update.append((time.perf_counter() - t0) / len(ms) * 1e6)
    final = ref.finish(ms[-1].t)[-1]
    print(f"measurements per episode: {len(ms)} ({ms[-1].t:.1f} s sim)")
    print(f"referee update: median {statistics.median(per_update):.1f} us, min {min(per_update):.1f} us "
          f"per measurement over {repeats} runs")
    print(f"episode result: {final['completion_class']}, events: {len(ref.events)}")
    step_us = mujoco_step_us()
    ratio = statistics.median(per_update) / step_us
    print(f"MuJoCo step of the weighing scene: {step_us:.1f} us")
    print(f"ratio referee update / physics step: {ratio:.2f}")


def mujoco_step_us(steps: int = 2000) -> float:
    """Median cost of one physics step of the weighing scene (arm holding still)."""
    from labference_ros.tasks.weighing.instances import generate
    from labference_ros.sim.mujoco_backend import MujocoBackend

    backend = MujocoBackend()
    backend.load(generate("basic", 1, task_seed=1, layout_seed=1, policy_seed=0)[0])
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        backend.step(steps)
        samples.append((time.perf_counter() - t0) / steps * 1e6)
    backend.close()
    return statistics.median(samples)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
