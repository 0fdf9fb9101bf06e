"""Raw MuJoCo throughput of the weighing scene, without any ROS graph.

Prints physics steps/s (arm moving, no rendering) and rendered frames/s for a
camera schedule (every camera every `--period` seconds of sim time), for the
visual meshes and for the cheaper collision-geometry rendering.

    MUJOCO_GL=egl .venv/bin/python benchmarks/bench_sim_raw.py
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from labference_ros.mujoco_cell.panda_model import HOME_ARM_Q, panda_spec  # noqa: E402
from labference_ros.sim.backend import CAMERA_NAMES  # noqa: E402
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings  # noqa: E402
from labference_ros.tasks.weighing import scene  # noqa: E402
from labference_ros.tasks.weighing.instance import WeighingInstance  # noqa: E402
from labference_ros.tasks.weighing.layout import generate_layout  # noqa: E402


def instance() -> WeighingInstance:
    return WeighingInstance("bench", "basic", 1, 3, 0, 180.0, 130.0, layout=generate_layout(3))


def wiggle(backend: MujocoBackend, t: float) -> None:
    q = np.array(HOME_ARM_Q) + 0.2 * np.sin(2 * np.pi * 0.5 * t) * np.array([1, 0.5, 0, 0.5, 0, 0.5, 1])
    backend.set_arm_targets(q)


def bench_physics_idle(sim_seconds: float) -> float:
    b = MujocoBackend()
    b.load(instance())
    steps = int(sim_seconds / b.timestep)
    t0 = time.perf_counter()
    b.step(steps)
    wall = time.perf_counter() - t0
    b.close()
    return steps / wall


def bench_physics(sim_seconds: float) -> float:
    b = MujocoBackend()
    b.load(instance())
    steps = int(sim_seconds / b.timestep)
    control_every = 5  # 100 Hz arm targets
    t0 = time.perf_counter()
    for i in range(0, steps, control_every):
        wiggle(b, b.sim_time)
        b.step(control_every)
    wall = time.perf_counter() - t0
    b.close()
    return steps / wall


def bench_render(sim_seconds: float, period: float, size: int, meshes: bool) -> tuple[float, float]:
    b = MujocoBackend(RenderSettings(width=size, height=size, visual_meshes=meshes))
    b.load(instance())
    for cam in CAMERA_NAMES:  # the first frame of a context pays its set-up: not timed
        b.render(cam)
    frames, t0 = 0, time.perf_counter()
    render_wall = 0.0
    next_frame = 0.0
    while b.sim_time < sim_seconds:
        wiggle(b, b.sim_time)
        b.advance(0.01)
        if b.sim_time + 1e-9 >= next_frame:
            r0 = time.perf_counter()
            for cam in CAMERA_NAMES:
                b.render(cam)
                frames += 1
            render_wall += time.perf_counter() - r0
            next_frame += period
    wall = time.perf_counter() - t0
    b.close()
    return frames / render_wall, sim_seconds / wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-seconds", type=float, default=10.0)
    ap.add_argument("--period", type=float, default=0.05, help="camera period, sim seconds")
    ap.add_argument("--size", type=int, default=128)
    args = ap.parse_args()
    idle = bench_physics_idle(args.sim_seconds)
    print(f"physics: {idle:,.0f} steps/s ({idle * 0.002:.1f}x real time), arm holding, no commands")
    sps = bench_physics(args.sim_seconds)
    print(f"physics: {sps:,.0f} steps/s ({sps * 0.002:.1f}x real time), arm moving, 100 Hz targets")
    rates = {}
    for kind, meshes, simplified in (("visual meshes, full", True, False), ("visual meshes, as simulated", True, True),
                                     ("collision geoms", False, True)):
        # The scene's arm: every face of the Menagerie meshes, or the cameras' decimated links.
        scene.panda_spec = lambda simplified_visuals=True, s=simplified: panda_spec(simplified_visuals=s)
        fps, rtf = bench_render(args.sim_seconds / 2, args.period, args.size, meshes)
        rates[kind] = fps
        print(f"render {args.size}x{args.size} {kind}: {fps:,.1f} frames/s; with "
              f"{len(CAMERA_NAMES)} cameras every {args.period} s sim -> {rtf:.2f}x real time")
    print(f"simplified / full visual meshes, frames/s: {rates['visual meshes, as simulated'] / rates['visual meshes, full']:.2f}")


if __name__ == "__main__":
    main()
