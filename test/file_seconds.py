"""Rewrite test/file_seconds.json (the order conftest hands test files to the workers)
from the slowest-durations list pytest prints (`make test ARGS="--durations=60"`, as CI does).

usage: .venv/bin/python test/file_seconds.py PYTEST_OUTPUT "where it was measured"
"""
from __future__ import annotations

import collections
import json
import pathlib
import re
import sys

LINE = re.compile(r"^([0-9.]+)s (?:setup|call|teardown)\s+(\S+?)::")


def main(log: str, measured: str) -> None:
    seconds: collections.Counter[str] = collections.Counter()
    for line in pathlib.Path(log).read_text().splitlines():
        match = LINE.match(line)
        if match:
            seconds[match.group(2)] += float(match.group(1))
    if not seconds:
        sys.exit(f"error: no durations in {log} (run pytest with --durations=N)")
    table = {path: round(s) for path, s in seconds.most_common()}
    out = pathlib.Path(__file__).with_name("file_seconds.json")
    out.write_text(json.dumps({"measured": measured, "seconds": table}, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
