"""A whole scripted_expert episode: the full ROS graph vs raw MuJoCo, in one run.

Raw: one process loads the same instance, executes the same scripted transfer at
the same 50 Hz control rate, takes a measurement (world state, load-cell wrench,
joints) every 10 ms of sim time, renders the three cameras at --camera-rate at
the graph's image size, and runs on until the referee's 3 s terminal dwell
could have completed. Graph: `labference launch weighing_sim.launch.py` running
the same instance twice (record:=false): the first episode pays the graph's
start-up (seven Python processes importing rclpy, MuJoCo, the planner), the
second is what every further episode of a campaign worker costs. Wall times are
the episodes' as the runner reports them; CPU times are of every process of the
launch, sampled at the episodes' boundaries. Ratios are per sim second (the
graph's episode ends on the referee's dwell, a little before the raw one).

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


def graph_episodes(instance, camera_rate: float, size: tuple[int, int], record: bool = False):
    """The same instance twice through one launch: per episode (wall s, sim s, CPU s of
    every process of the launch), the first with the start-up, and CPU s per node."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "instances.json")
        write_instance_list(path, [instance, instance])
        out = os.path.join(tmp, "run")
        exe = os.path.join(os.path.dirname(sys.executable), "labference")
        proc = subprocess.Popen([exe, "launch", "weighing_sim.launch.py", "system:=scripted_expert",
                                 f"instances:={path}", f"record:={'true' if record else 'false'}",
                                 f"camera_rate:={camera_rate}", f"image_width:={size[1]}", f"image_height:={size[0]}",
                                 f"output_dir:={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        marks, per_node = _watch_cpu(proc, os.path.join(out, "episodes"))
        assert proc.returncode == 0, proc.returncode
        attempts = [json.loads(line) for line in open(os.path.join(out, "attempts.jsonl"))]
        assert [a["status"] for a in attempts] == ["ok", "ok"], attempts
        # marks: CPU of the launch when it started, when the second episode started and
        # when the second episode's scores were written.
        cpu = [marks["second_start"] - marks["launch"], marks["second_end"] - marks["second_start"]]
        return [(a["wall_s"], a["sim_s"], c) for a, c in zip(attempts, cpu)], per_node


def _watch_cpu(proc: subprocess.Popen, episodes_dir: str) -> tuple[dict[str, float], dict[str, float]]:
    """CPU seconds of every process of the launch at the second episode's start and end
    (sampled every 20 ms), and per node process (its last sample, up to 20 ms short)."""
    import psutil

    root = psutil.Process(proc.pid)
    last: dict[str, float] = {}
    seen: dict[int, float] = {}  # pid -> CPU s at its last sample (exited processes keep theirs)
    marks = {"launch": 0.0}
    second = None
    while proc.poll() is None:
        try:
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in processes:
            try:
                cmd = p.cmdline()
                t = p.cpu_times()
            except psutil.Error:
                continue
            seen[p.pid] = t.user + t.system + t.children_user + t.children_system
            name = next((a.rsplit(".", 1)[-1] for a in cmd if a.startswith("labference_ros.nodes.")), None)
            if name:
                last[name] = t.user + t.system
        total = sum(seen.values())
        episodes = sorted(os.listdir(episodes_dir)) if os.path.isdir(episodes_dir) else []
        if second is None and len(episodes) >= 2:
            second = os.path.join(episodes_dir, episodes[1], "scores.json")
            marks["second_start"] = total
        if second is not None and "second_end" not in marks and os.path.exists(second):
            marks["second_end"] = total
        time.sleep(0.02)
    proc.wait()
    return marks, last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--camera-rate", type=float, default=10.0)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--record", action="store_true",
                    help="Record the graph's episodes (bags and videos, as record:=true does).")
    a = ap.parse_args()
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    size = (a.height, a.width)
    raw_wall, raw_sim, raw_cpu = raw_episode(instance, a.camera_rate, size)
    (first, steady), per_node = graph_episodes(instance, a.camera_rate, size, a.record)
    print(f"raw MuJoCo episode          : {raw_wall:6.2f} s wall, {raw_cpu:6.2f} s CPU for {raw_sim:5.2f} s sim "
          f"(model load and planning included)")
    for label, (wall, sim, cpu) in (("graph, first episode       ", first), ("graph, second episode      ", steady)):
        print(f"{label}: {wall:6.2f} s wall, {cpu:6.2f} s CPU (all processes) for {sim:5.2f} s sim")
    for label, (wall, sim, cpu) in (("first episode (start-up included)", first),
                                    ("second episode (a campaign worker's every further episode)", steady)):
        print(f"ratio graph/raw per sim second, {label}: wall {(wall / sim) / (raw_wall / raw_sim):.2f}, "
              f"CPU {(cpu / sim) / (raw_cpu / raw_sim):.2f}")
    print("CPU seconds per node over both episodes (start-up included): " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(per_node.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
