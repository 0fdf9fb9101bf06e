"""A whole scripted_expert episode: the full ROS graph vs raw MuJoCo, in one run.

Raw: one process loads the same instance, executes the same scripted transfer at
the same 50 Hz control rate, takes a measurement (world state, load-cell wrench,
joints) every 10 ms of sim time, renders the three cameras at --camera-rate at
the graph's image size, and runs on until the referee's 3 s terminal dwell
could have completed. Graph: `labference launch weighing_sim.launch.py` running
the same instance --episodes times (record:=false): the first episode pays the
graph's start-up (six Python processes importing rclpy, MuJoCo, the planner),
the others are what every further episode of a campaign worker costs (their
median is printed; this machine's timings drift by 20 % between minutes, so
the raw episodes run before and after the graph, after one raw warm-up episode
that is not counted). Wall times are
the episodes' as the runner reports them; CPU times are of every process of the
launch from the end of the episode before (the first: from the launch on). Ratios are per sim second (the
graph's episode ends on the referee's dwell, a little before the raw one).

    .venv/bin/python benchmarks/bench_episode.py
    .venv/bin/python benchmarks/bench_episode.py --episodes 4 --rounds 5   # median and range
    .venv/bin/python benchmarks/bench_episode.py --graph-only   # the graph's own figures, to compare versions
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("MUJOCO_GL", "egl")

# Issue 19's targets for a campaign worker's episodes, graph / raw per sim second.
WALL_TARGET = 1.3
CPU_TARGET = 1.5

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


def graph_episodes(instance, camera_rate: float, size: tuple[int, int], episodes: int, record: bool = False):
    """The same instance ``episodes`` times through one launch: per episode (wall s, sim s,
    CPU s of every process of the launch; the first's from the launch on), and CPU s per node."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "instances.json")
        write_instance_list(path, [instance] * episodes)
        out = os.path.join(tmp, "run")
        exe = os.path.join(os.path.dirname(sys.executable), "labference")
        proc = subprocess.Popen([exe, "launch", "weighing_sim.launch.py", "system:=scripted_expert",
                                 f"instances:={path}", f"record:={'true' if record else 'false'}",
                                 f"camera_rate:={camera_rate}", f"image_width:={size[1]}", f"image_height:={size[0]}",
                                 f"output_dir:={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        watch_cpu0, watch_wall0 = _cpu(resource.RUSAGE_SELF), time.perf_counter()
        ends, per_node, node_ends = _watch_cpu(proc, os.path.join(out, "episodes"))
        watch_cpu = _cpu(resource.RUSAGE_SELF) - watch_cpu0
        watch_wall = time.perf_counter() - watch_wall0
        print(f"the CPU watcher's own CPU: {watch_cpu:.2f} s over {watch_wall:.1f} s of the launch "
              f"({100 * watch_cpu / watch_wall:.1f} % of a core)", flush=True)
        assert proc.returncode == 0, proc.returncode
        attempts = [json.loads(line) for line in open(os.path.join(out, "attempts.jsonl"))]
        assert [a["status"] for a in attempts] == ["ok"] * episodes, attempts
        # Episode k: from the end of episode k-1 (its reset and the runner's bookkeeping
        # included); the first from the launch on, with the graph's start-up.
        cpu = [ends[k] - (ends[k - 1] if k else 0.0) for k in range(episodes)]
        # CPU s of each node in every episode after the first (median over them).
        later = [{n: node_ends[k][n] - node_ends[k - 1].get(n, 0.0) for n in node_ends[k]}
                 for k in range(1, episodes)]
        per_episode = {n: statistics.median(e.get(n, 0.0) for e in later) for n in per_node} if later else {}
        return [(a["wall_s"], a["sim_s"], c) for a, c in zip(attempts, cpu)], per_node, per_episode


# The watcher runs beside the graph on the same cores, so it must cost little: it looks
# for a finished episode every EPISODE_POLL_S (a directory listing), reads the processes'
# CPU times when one has finished and every CPU_SAMPLE_S (an exiting process keeps its
# last sample), and lists the launch's process tree only every TREE_REFRESH_S. Listing
# the tree and reading every command line every 20 ms took 15 % of a core. So a process
# that lives less than TREE_REFRESH_S may go uncounted, and one that exits loses up to
# CPU_SAMPLE_S of CPU: the graph's nodes live as long as the launch.
EPISODE_POLL_S = 0.02
CPU_SAMPLE_S = 0.5
TREE_REFRESH_S = 1.0


def _watch_cpu(proc: subprocess.Popen, episodes_dir: str):
    """CPU seconds of every process of the launch when each episode ended (its scores.json
    appeared, seen within EPISODE_POLL_S), and the CPU seconds of each node process (its
    last sample, up to CPU_SAMPLE_S short)."""
    import psutil

    root = psutil.Process(proc.pid)
    processes: dict[int, tuple[psutil.Process, str | None]] = {}  # pid -> (process, node name)
    last: dict[str, float] = {}
    seen: dict[int, float] = {}  # pid -> CPU s at its last sample (exited processes keep theirs)
    ends: dict[int, float] = {}
    node_ends: dict[int, dict[str, float]] = {}

    def refresh_tree() -> None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for p in tree:
            if p.pid in processes and processes[p.pid][1] is not None:
                continue
            # A process without a node's name is looked at again: one seen between its fork and
            # its exec still shows its parent's command line.
            try:
                cmd = p.cmdline()
            except psutil.Error:
                continue
            at = next((k for k, a in enumerate(cmd) if a.startswith("labference_ros.nodes.")), None)
            name = None if at is None else cmd[at].rsplit(".", 1)[-1]
            if name == "composed" and at + 1 < len(cmd):  # nodes that share a process: their joined names
                name = cmd[at + 1]
            processes[p.pid] = (p, name)

    def sample() -> float:
        for pid, (p, name) in processes.items():
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            seen[pid] = t.user + t.system
            if name:
                last[name] = seen[pid]
        return sum(seen.values())

    next_tree = next_sample = 0.0
    while proc.poll() is None:
        now = time.monotonic()
        if now >= next_tree:
            refresh_tree()
            next_tree = now + TREE_REFRESH_S
        total = None
        if now >= next_sample:
            total = sample()
            next_sample = now + CPU_SAMPLE_S
        episodes = sorted(os.listdir(episodes_dir)) if os.path.isdir(episodes_dir) else []
        for k, name in enumerate(episodes):
            if k not in ends and os.path.exists(os.path.join(episodes_dir, name, "scores.json")):
                total = sample() if total is None else total
                ends[k] = total
                node_ends[k] = dict(last)
        time.sleep(EPISODE_POLL_S)
    proc.wait()
    # An episode whose scores appeared after the last sample ends with the launch.
    names = sorted(os.listdir(episodes_dir)) if os.path.isdir(episodes_dir) else []
    for k in range(len(names)):
        ends.setdefault(k, sum(seen.values()))
        node_ends.setdefault(k, dict(last))
    return ends, last, node_ends


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--camera-rate", type=float, default=10.0)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--episodes", type=int, default=4,
                    help="Episodes of the instance through one launch (the first pays the start-up)")
    ap.add_argument("--raw-repeats", type=int, default=2)
    ap.add_argument("--graph-only", action="store_true",
                    help="Run only the graph and print its own figures per sim second (no raw episodes, no "
                         "ratio; --raw-repeats is not used): for comparing two versions of the graph, alternated.")
    ap.add_argument("--record", action="store_true",
                    help="Record the graph's episodes (bags and videos, as record:=true does).")
    ap.add_argument("--rounds", type=int, default=1,
                    help="Repeat the whole measurement (raw, graph, raw) this many times and print the "
                         "median and range of the per-round ratios: this machine's speed drifts by 10-30 %% "
                         "between minutes, so one round decides little near a target.")
    a = ap.parse_args()
    if a.rounds < 1 or a.episodes < 1 or a.raw_repeats < 1:
        ap.error("--rounds, --episodes and --raw-repeats must be at least 1")
    if a.rounds > 1 and a.episodes < 2:
        ap.error("--rounds > 1 compares the episodes after the first: give --episodes 2 or more")
    if a.graph_only and a.episodes < 2:
        ap.error("--graph-only reports the episodes after the first: give --episodes 2 or more")
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    size = (a.height, a.width)
    if a.graph_only:
        rounds = []
        for k in range(1, a.rounds + 1):
            if a.rounds > 1:
                print(f"round {k} of {a.rounds}", flush=True)
            graph, per_node, per_episode = graph_episodes(instance, a.camera_rate, size, a.episodes, a.record)
            rounds.append(print_graph(graph, per_node, per_episode))
        if a.rounds > 1:
            walls, cpus = zip(*rounds)
            print(f"over {a.rounds} rounds, graph per sim second, episodes 2-{a.episodes}: wall median "
                  f"{statistics.median(walls):.3f} ({min(walls):.3f}-{max(walls):.3f}), CPU median "
                  f"{statistics.median(cpus):.3f} ({min(cpus):.3f}-{max(cpus):.3f})")
        return
    # The first raw episode in a process pays one-time costs (its first model and renderer
    # load, the planner's first plan): about 1 CPU s more than the next. The graph pays its own in its
    # first episode, which the ratio leaves out, so the raw side warms up too.
    warm_wall, _sim, warm_cpu = raw_episode(instance, a.camera_rate, size)
    print(f"raw MuJoCo warm-up episode (not counted): {warm_wall:6.2f} s wall, {warm_cpu:6.2f} s CPU", flush=True)
    later = []
    for k in range(1, a.rounds + 1):
        if a.rounds > 1:
            print(f"round {k} of {a.rounds}", flush=True)
        ratio = one_round(instance, size, a)
        if ratio is not None:
            later.append(ratio)
    if a.rounds > 1:
        walls, cpus = zip(*later)
        print(f"over {a.rounds} rounds, episodes 2-{a.episodes}: wall median {statistics.median(walls):.2f} "
              f"({min(walls):.2f}-{max(walls):.2f}), CPU median {statistics.median(cpus):.2f} "
              f"({min(cpus):.2f}-{max(cpus):.2f}); wall at most {WALL_TARGET} in "
              f"{sum(w <= WALL_TARGET for w in walls)} of {a.rounds}, CPU at most {CPU_TARGET} in "
              f"{sum(c <= CPU_TARGET for c in cpus)} of {a.rounds}")


def one_round(instance, size, a) -> tuple[float, float] | None:
    """Raw episodes before and after the graph's; prints this round and returns the median
    (wall, CPU) ratio of the graph's episodes after the first (None with one episode)."""
    # Raw runs before and after the graph: this machine's speed drifts between minutes.
    before = (a.raw_repeats + 1) // 2
    raws = [raw_episode(instance, a.camera_rate, size) for _ in range(before)]
    graph, per_node, per_episode = graph_episodes(instance, a.camera_rate, size, a.episodes, a.record)
    raws += [raw_episode(instance, a.camera_rate, size) for _ in range(a.raw_repeats - before)]
    raw_wall, raw_sim, raw_cpu = (statistics.median(x) for x in zip(*raws))
    print(f"raw MuJoCo episode (median of {a.raw_repeats}): {raw_wall:6.2f} s wall, {raw_cpu:6.2f} s CPU for "
          f"{raw_sim:5.2f} s sim (model load and planning included); per sim s {raw_wall / raw_sim:.3f} wall, "
          f"{raw_cpu / raw_sim:.3f} CPU")
    print_episodes(graph)

    def ratios(wall, sim, cpu):
        return (wall / sim) / (raw_wall / raw_sim), (cpu / sim) / (raw_cpu / raw_sim)

    first = ratios(*graph[0])
    print(f"ratio graph/raw per sim second, first episode (start-up included): wall {first[0]:.2f}, CPU {first[1]:.2f}")
    result = None
    if len(graph) > 1:
        later = [ratios(*e) for e in graph[1:]]
        result = tuple(statistics.median(x) for x in zip(*later))
        print(f"ratio graph/raw per sim second, episodes 2-{len(graph)} (a campaign worker's every further episode), "
              f"median: wall {result[0]:.2f}, CPU {result[1]:.2f}")
    print_nodes(per_node, per_episode)
    return result


def print_graph(graph, per_node, per_episode) -> tuple[float, float]:
    """--graph-only: each episode, the median per sim second of the episodes after the first
    (returned: wall, CPU), per node."""
    print_episodes(graph)
    wall = statistics.median(w / s for w, s, _c in graph[1:])
    cpu = statistics.median(c / s for _w, s, c in graph[1:])
    print(f"graph per sim second, episodes 2-{len(graph)} (median): wall {wall:.3f}, CPU {cpu:.3f}")
    print_nodes(per_node, per_episode)
    return wall, cpu


def print_episodes(graph) -> None:
    for k, (wall, sim, cpu) in enumerate(graph, start=1):
        print(f"graph episode {k}{' (start-up included)' if k == 1 else ''}: {wall:6.2f} s wall, {cpu:6.2f} s CPU "
              f"(all processes) for {sim:5.2f} s sim")


def print_nodes(per_node, per_episode) -> None:
    print("CPU seconds per node over the whole launch: " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(per_node.items(), key=lambda kv: -kv[1])))
    if per_episode:
        print("CPU seconds per node per episode, episodes 2 on (median): " +
              ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_episode.items(), key=lambda kv: -kv[1])), flush=True)


if __name__ == "__main__":
    main()
