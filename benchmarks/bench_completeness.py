"""Recorded completeness with every core loaded by another process (issue 54, item 2).

Records `labference launch weighing_sim.launch.py` episodes (record:=true) beside
busy processes on every core and sums each bag's own tally (recording/
completeness.py: per topic, the writers' sequence numbers expected against the
messages written) over the episodes. Targets: 100 % of world states and balance
readings, at least 99.9 % of joint states and of each camera's frames.

    .venv/bin/python benchmarks/bench_completeness.py --episodes 20
    .venv/bin/python benchmarks/bench_completeness.py --episodes 2   # a quick try
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from cpu_load import saturated  # noqa: E402

from labference_ros.recording.bag_reader import BagError, EpisodeBagReader  # noqa: E402

BIN = pathlib.Path(sys.executable).parent
TARGETS = {"/evaluator/world_state": 1.0, "/balance/reading": 1.0, "/joint_states": 0.999,
           "/cameras/front/image_raw": 0.999, "/cameras/wrist/image_raw": 0.999,
           "/cameras/display/image_raw": 0.999}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--cores", type=int, default=None, help="busy processes beside the graph (default: all cores)")
    parser.add_argument("--out", default=None)
    opts = parser.parse_args()
    out = pathlib.Path(opts.out or tempfile.mkdtemp(prefix="completeness-")) / "run"
    argv = [str(BIN / "labference"), "launch", "weighing_sim.launch.py", f"episodes:={opts.episodes}",
            "record:=true", "free_space_check:=false", f"output_dir:={out}"]
    with saturated(opts.cores) as busy:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    totals: dict[str, list[int]] = {}
    bags = sorted(out.glob("episodes/*/bag"))
    for bag in bags:
        try:
            tally = json.loads(EpisodeBagReader(bag).custom.get("completeness") or "{}")
        except (BagError, ValueError) as exc:
            print(f"{bag}: {exc}", file=sys.stderr)
            continue
        for topic, row in tally.items():
            t = totals.setdefault(topic, [0, 0])
            t[0] += row.get("expected", 0)
            t[1] += row.get("recorded", 0)
    rows, ok = {}, True
    for topic, (expected, recorded) in sorted(totals.items()):
        share = recorded / expected if expected else None
        target = TARGETS.get(topic)
        met = None if target is None or share is None else share >= target
        ok = ok and met is not False
        rows[topic] = {"expected": expected, "recorded": recorded,
                       "completeness": None if share is None else round(share, 6), "target": target, "met": met}
    print(json.dumps({"episodes": len(bags), "busy_processes": busy, "launcher_exit": done.returncode,
                      "topics": rows, "run_dir": str(out)}, indent=1, sort_keys=True))
    return 0 if ok and bags else 1


if __name__ == "__main__":
    raise SystemExit(main())
