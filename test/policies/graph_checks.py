"""Run `labference launch` as a user would and check what a run leaves behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
# Small images and no bag: these runs test failures, not perception.
FAST = ["record:=false", "image_width:=64", "image_height:=48", "service_timeout_s:=60"]


def launch(out: Path, *tokens: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", *tokens, f"output_dir:={out}"],
                          capture_output=True, text=True, timeout=timeout)


def console(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


def episode_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """The runner's one line per errored episode, without the launcher's node prefix."""
    return [line.split("] ", 1)[1] for line in proc.stdout.splitlines() if "[episode_runner] episode " in line]


def assert_records_parse(run_dir: Path) -> list[dict]:
    """Every JSON file parses; every JSONL file is whole lines that parse; no tmp file left. The attempts."""
    for path in run_dir.rglob("*"):
        if path.is_dir() or "bag" in path.parts or "videos" in path.parts:
            continue
        assert not path.name.endswith(".tmp"), f"left behind: {path}"
        if path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".jsonl":
            data = path.read_bytes()
            assert not data or data.endswith(b"\n"), f"{path} ends in a partial line"
            for line in data.splitlines():
                json.loads(line)
    attempts = run_dir / "attempts.jsonl"
    return [json.loads(line) for line in attempts.read_text().splitlines()] if attempts.exists() else []


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def assert_one_chunk_per_request(requests, chunks) -> None:
    """Every recorded chunk answers one request, in order. The server may have answered one
    more: the request in flight when the episode ended (the bridge waits for its reply, charged
    to the system, but executes and records no chunk of it)."""
    assert len(chunks) <= len(requests) <= len(chunks) + 1, (len(requests), len(chunks))
