"""A whole scripted_expert episode: the full ROS graph vs raw MuJoCo, in one run.

Raw: one process loads the same instance, executes the same scripted transfer at
the same 50 Hz control rate, takes a measurement (world state, load-cell wrench,
joints) every 10 ms of sim time, renders the three cameras at --camera-rate at
the graph's image size, and runs on until the referee's 3 s terminal dwell
could have completed. Graph: `labference launch weighing_sim.launch.py` with the
same instance (record:=false), timing the episode as the runner reports it
(start-up excluded). Prints both wall times and their ratio.

    .venv/bin/python benchmarks/bench_episode.py
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("MUJOCO_GL", "egl")

from raw_schedule import RawSchedule  # noqa: E402

from labference_ros.tasks.weighing.instances import generate, write_instance_list  # noqa: E402


def _cpu(who: int) -> float:
    """User + system CPU seconds of this process (all threads) or of its waited-for descendants."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def raw_episode(instance, camera_rate: float, size: tuple[int, int], control_hz: float = 50.0):
    from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings
    from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings
    from labference_ros.tasks.weighing.moves import plan_to_pan

    t0 = time.perf_counter()
    c0 = _cpu(resource.RUSAGE_SELF)
    b = MujocoBackend(RenderSettings(width=size[1], height=size[0]))
    b.load(instance)
    (standard,) = instance.goal_set
    plan = plan_to_pan(PickPlacePlanner(PickPlaceSettings(rate_hz=control_hz)),
                       b.joint_state().position[:7], standard, b.measure().objects[standard].position,
                       instance.layout["balance"])
    events = sorted(plan.gripper_events, key=lambda e: e.t)
    schedule = RawSchedule(camera_rate)
    steps_per_row = int(round(1.0 / control_hz / b.timestep))
    total_rows = len(plan.arm_q) + int(round(5.0 * control_hz))  # settle + 3 s dwell
    k = 0
    for i in range(total_rows):
        t_plan = i * plan.dt
        while k < len(events) and events[k].t <= t_plan + 1e-9:
            e = events[k]
            b.set_gripper(e.width, e.speed, e.force, e.epsilon_inner, e.epsilon_outer, e.grasp)
            k += 1
        b.set_arm_targets(plan.arm_q[min(i, len(plan.arm_q) - 1)])
        for _ in range(steps_per_row):
            schedule.step(b)
    sim_s = b.sim_time
    b.close()
    return time.perf_counter() - t0, sim_s, _cpu(resource.RUSAGE_SELF) - c0


def graph_episode(instance, camera_rate: float, size: tuple[int, int], record: bool = False):
    """Wall and sim seconds of the episode as the runner timed it, and the CPU seconds of
    every process of the launch (start-up and shutdown included)."""
    c0 = _cpu(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "instances.json")
        write_instance_list(path, [instance])
        out = os.path.join(tmp, "run")
        exe = os.path.join(os.path.dirname(sys.executable), "labference")
        proc = subprocess.Popen([exe, "launch", "weighing_sim.launch.py", "system:=scripted_expert",
                                 f"instances:={path}", f"record:={'true' if record else 'false'}",
                                 f"camera_rate:={camera_rate}", f"image_width:={size[1]}", f"image_height:={size[0]}",
                                 f"output_dir:={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        per_node = _watch_cpu(proc)
        assert proc.returncode == 0, proc.returncode
        (attempt,) = [json.loads(line) for line in open(os.path.join(out, "attempts.jsonl"))]
        assert attempt["status"] == "ok", attempt
        return attempt["wall_s"], attempt["sim_s"], _cpu(resource.RUSAGE_CHILDREN) - c0, per_node


def _watch_cpu(proc: subprocess.Popen) -> dict[str, float]:
    """CPU seconds per node process of a launch (sampled until each exits; the last
    sample, so up to 0.2 s short), keyed by node module."""
    import psutil

    last: dict[str, float] = {}
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            children = root.children(recursive=True)
        except psutil.NoSuchProcess:
            break
        for child in children:
            try:
                cmd = child.cmdline()
                t = child.cpu_times()
            except psutil.Error:
                continue
            name = next((a.rsplit(".", 1)[-1] for a in cmd if a.startswith("labference_ros.nodes.")), None)
            if name:
                last[name] = t.user + t.system
        time.sleep(0.2)
    proc.wait()
    return last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--camera-rate", type=float, default=10.0)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--record", action="store_true", help="Record the graph's episode (bag and videos, as record:=true does).")
    a = ap.parse_args()
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    size = (a.height, a.width)
    raw_wall, raw_sim, raw_cpu = raw_episode(instance, a.camera_rate, size)
    graph_wall, graph_sim, graph_cpu, per_node = graph_episode(instance, a.camera_rate, size, a.record)
    print(f"raw MuJoCo episode : {raw_wall:6.2f} s wall, {raw_cpu:6.2f} s CPU for {raw_sim:5.2f} s sim")
    print(f"full graph episode : {graph_wall:6.2f} s wall, {graph_cpu:6.2f} s CPU (all processes, start-up "
          f"included) for {graph_sim:5.2f} s sim")
    print(f"ratio graph/raw wall time: {graph_wall / raw_wall:.2f}")
    # Per sim second: the two runs' sim durations differ a little (the graph ends on the referee's dwell).
    print(f"ratio graph/raw CPU time per sim second: {(graph_cpu / graph_sim) / (raw_cpu / raw_sim):.2f}")
    print("CPU seconds per node (start-up included): " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(per_node.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
