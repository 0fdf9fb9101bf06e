"""Replay audit cost: wall time of `labference audit` on an episode vs the episode's
sim duration, printed as a ratio (below 1: the audit is faster than the episode).

With BAG_OR_RUN_DIR the recorded episodes there are audited. Without it, one
episode is recorded first: lab_sim, balance, referee and recorder run as
processes and test/peers/weighing_driver.py transfers a weight (--mode).

    .venv/bin/python benchmarks/bench_audit.py [BAG_OR_RUN_DIR] [--repeats 3] [--mode correct]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mode", default="correct", choices=("correct", "wrong", "drop"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(a.path) if a.path else record_episode(pathlib.Path(tmp), a.mode)
        for bag in find_episode_bags(path):
            walls, result = [], None
            for _ in range(a.repeats):
                result = audit_episode(bag)
                walls.append(result.wall_s)
            if result.error:
                print(f"{bag}: {result.error}")
                return 2
            wall = statistics.median(walls)
            size_mb = sum(f.stat().st_size for f in result.bag.glob("*.mcap")) / 1e6
            print(f"{result.episode_id}: audit {wall:.3f} s (median of {a.repeats}) for {result.sim_duration_s:.2f} s "
                  f"of sim, {result.counts['world_states']} world states, bag {size_mb:.1f} MB, {result.verdict}; "
                  f"ratio audit/sim = {wall / max(result.sim_duration_s, 1e-9):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
