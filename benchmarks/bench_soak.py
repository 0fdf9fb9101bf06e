"""Soak: many graph episodes with every core loaded by another process; how many
were lost to the middleware (issue 54, item 7: target 0).

Runs `labference launch weighing_sim.launch.py episodes:=N` (record:=false, small
images) beside busy processes on every core, then reads attempts.jsonl: an
episode "lost to the middleware" is one that errored with a kind the DDS layer
causes (a reply that never came: service_timeout; a stalled simulator:
sim_stalled; a node no longer found: node_left), as opposed to the tested
system's or the disk's errors.

    .venv/bin/python benchmarks/bench_soak.py                  # 200 episodes (hours on 2 cores)
    .venv/bin/python benchmarks/bench_soak.py --episodes 5     # a handful, to try it
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from cpu_load import saturated  # noqa: E402

MIDDLEWARE_KINDS = ("service_timeout", "sim_stalled", "node_left")
BIN = pathlib.Path(sys.executable).parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--system", default="scripted_expert")
    parser.add_argument("--cores", type=int, default=None, help="busy processes beside the graph (default: all cores)")
    parser.add_argument("--out", default=None, help="run directory (default: a temporary one)")
    opts = parser.parse_args()
    out = pathlib.Path(opts.out or tempfile.mkdtemp(prefix="soak-")) / "run"
    argv = [str(BIN / "labference"), "launch", "weighing_sim.launch.py", f"episodes:={opts.episodes}",
            f"system:={opts.system}", "record:=false", "image_width:=160", "image_height:=120",
            "free_space_check:=false", f"output_dir:={out}"]
    t0 = time.monotonic()
    with saturated(opts.cores) as busy:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    rows = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines() if line.strip()] \
        if (out / "attempts.jsonl").exists() else []
    kinds = collections.Counter(r.get("error_kind") for r in rows if r.get("status") == "error")
    lost = sum(kinds[k] for k in MIDDLEWARE_KINDS)
    result = {"episodes_planned": opts.episodes, "episodes_attempted": len(rows), "busy_processes": busy,
              "launcher_exit": done.returncode, "errors_by_kind": dict(kinds), "lost_to_middleware": lost,
              "wall_s": round(wall, 1), "run_dir": str(out)}
    print(json.dumps(result, indent=1, sort_keys=True))
    if len(rows) < opts.episodes:
        print(done.stdout[-3000:], file=sys.stderr)
    return 0 if lost == 0 and len(rows) == opts.episodes else 1


if __name__ == "__main__":
    raise SystemExit(main())
