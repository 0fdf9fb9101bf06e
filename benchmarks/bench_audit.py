"""Replay audit cost: wall time of `labference audit` on an episode vs the episode's
sim duration, printed as a ratio (below 1: the audit is faster than the episode).

With BAG_OR_RUN_DIR the recorded episodes there are audited. Without it, one
episode is recorded first: lab_sim, balance, referee and recorder run as
processes and test/peers/weighing_driver.py transfers a weight (--mode).

    .venv/bin/python benchmarks/bench_audit.py [BAG_OR_RUN_DIR] [--repeats 3] [--best] [--mode correct]

--best prints the fastest of the repeats instead of their median: on a shared
machine the least disturbed run is the steadier figure for a before/after pair.

Also prints the bag's bytes per sim second, per camera from the chunk index.
For the issue-19 figures record a default episode first (three 320x240 cameras
at 10 Hz): `labference launch weighing_sim.launch.py episodes:=1 output_dir:=DIR`.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from labference_ros.recording.audit import audit_episode, find_episode_bags
from labference_ros.rosenv import loopback_environ

REPO = pathlib.Path(__file__).resolve().parents[1]


def record_episode(out: pathlib.Path, mode: str) -> pathlib.Path:
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = str(43 + os.getpid() % 58)
    nodes = [subprocess.Popen([sys.executable, "-m", f"labference_ros.nodes.{n}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for n in ("lab_sim", "balance", "referee", "recorder")]
    try:
        ep = out / f"bench_{mode}"
        subprocess.run([sys.executable, str(REPO / "test" / "peers" / "weighing_driver.py"), mode, str(ep), "3",
                        "--record", "--episode", f"bench_{mode}"], env=env, check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
        return ep
    finally:
        for p in nodes:
            p.terminate()
        for p in nodes:
            p.wait(timeout=20)


def camera_bytes(bag_dir: pathlib.Path) -> dict[str, tuple[int, int, int]]:
    """Per camera: chunks, compressed and uncompressed bytes (from the chunk index)."""
    from mcap.reader import make_reader

    from labference_ros.recording.topics import camera_of

    out: dict[str, tuple[int, int, int]] = {}
    with open(next(bag_dir.glob("*.mcap")), "rb") as f:
        summary = make_reader(f).get_summary()
    for index in summary.chunk_indexes:
        cams = {camera_of(summary.channels[c].topic) for c in index.message_index_offsets}
        if len(cams) == 1 and None not in cams:
            cam = cams.pop()
            n, packed, raw = out.get(cam, (0, 0, 0))
            out[cam] = (n + 1, packed + index.compressed_size, raw + index.uncompressed_size)
    return out


def stage_times(bag, episode_id: str, repeats: int, pick=statistics.median) -> str:
    """CPU time of the audit's stages (``pick`` of ``repeats``): opening the bag (metadata,
    CRCs), reading and decoding the referee's inputs, and re-scoring them."""
    import json

    from labference_ros.core.records import episode_deadline, task_family_name
    from labference_ros.recording.audit import cyclic_gc_paused
    from labference_ros.recording.bag_reader import EpisodeBagReader
    from labference_ros.recording.replay import read_inputs, rebuild
    from labference_ros.tasks import family as task_family

    times: dict[str, list[float]] = {"open": [], "inputs": [], "referee": []}
    for _ in range(repeats):
        with cyclic_gc_paused():  # as audit_episode runs them
            c0 = time.process_time()
            reader = EpisodeBagReader(bag)
            c1 = time.process_time()
            inputs = read_inputs(reader, episode_id)
            c2 = time.process_time()
            run = json.loads((reader.dir.parent / "run.json").read_text())
            fam = task_family(task_family_name(run))
            instance = fam.instance_from_json(json.dumps(run["instance"]))
            c3 = time.process_time()
            rebuild(fam, inputs, instance, episode_id, (inputs.sim_span[1], "episode_end"), [],
                    deadline_s=episode_deadline(run))
            c4 = time.process_time()
        for name, dt in (("open", c1 - c0), ("inputs", c2 - c1), ("referee", c4 - c3)):
            times[name].append(dt)
    n = len(inputs.worlds)
    referee = pick(times["referee"])
    return (f"stages (CPU, {pick.__name__}): open and check the bag {pick(times['open']) * 1e3:.0f} ms, "
            f"read and decode the inputs {pick(times['inputs']) * 1e3:.0f} ms, "
            f"the referee over {n} measurements {referee * 1e3:.0f} ms ({referee / max(n, 1) * 1e6:.0f} us each)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--best", action="store_true", help="the fastest repeat instead of the median")
    ap.add_argument("--mode", default="correct", choices=("correct", "wrong", "drop"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(a.path) if a.path else record_episode(pathlib.Path(tmp), a.mode)
        for bag in find_episode_bags(path):
            walls, cpus, result = [], [], None
            for _ in range(a.repeats):
                c0 = time.process_time()
                result = audit_episode(bag)
                cpus.append(time.process_time() - c0)
                walls.append(result.wall_s)
            if result.error:
                print(f"{bag}: {result.error}")
                return 2
            pick = min if a.best else statistics.median
            wall = pick(walls)
            cpu = pick(cpus)
            sim = max(result.sim_duration_s, 1e-9)
            size_mb = sum(f.stat().st_size for f in result.bag.glob("*.mcap")) / 1e6
            print(f"{result.episode_id}: audit {wall:.3f} s wall, {cpu:.3f} s CPU ({pick.__name__} of {a.repeats}) for "
                  f"{result.sim_duration_s:.2f} s of sim, {result.counts['world_states']} world states, "
                  f"bag {size_mb:.2f} MB, {result.verdict}; ratio audit/sim = {wall / sim:.4f} wall, "
                  f"{cpu / sim:.4f} CPU")
            print("  " + stage_times(bag, result.episode_id, a.repeats, pick))
            for cam, (n, packed, raw) in sorted(camera_bytes(result.bag).items()):
                print(f"  camera {cam}: {n} chunks, {packed / sim / 1e3:.1f} kB per sim s in the bag "
                      f"({raw / max(packed, 1):.1f}x smaller than the raw frames)")
            print(f"  whole bag: {size_mb * 1e3 / sim:.1f} kB per sim s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
