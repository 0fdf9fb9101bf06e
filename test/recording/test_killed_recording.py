"""A recording cut short by SIGKILL (the recorder itself, or the launcher) leaves a
bag that `labference audit` reads; an unclosed one is reported as truncated and
`labference recover-bag` rewrites it closed."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import psutil
import pytest

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")

pytestmark = pytest.mark.slow


def labference(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([LABFERENCE, *args], capture_output=True, text=True, timeout=600)


def _wait_for_chunks(run: pathlib.Path, min_bytes: int, launcher: subprocess.Popen) -> pathlib.Path:
    """The episode's bag once a few chunks are on disk (a second or more of recording)."""
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        assert launcher.poll() is None, "the run ended before it could be killed"
        for mcap in run.glob("episodes/*/bag/*.mcap"):
            if mcap.stat().st_size >= min_bytes:
                return mcap.parent
        time.sleep(0.2)
    raise AssertionError("no bag grew within the time limit")


@pytest.mark.parametrize("victim", ["recorder", "launcher"])
def test_a_sigkilled_recording_leaves_a_bag_the_audit_reads(tmp_path, victim):
    run = tmp_path / "run"
    launcher = subprocess.Popen([LABFERENCE, "launch", "weighing_sim.launch.py", "episodes:=1", "image_width:=160",
                                 "image_height:=120", f"output_dir:={run}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bag = _wait_for_chunks(run, 400_000, launcher)
        tree = psutil.Process(launcher.pid).children(recursive=True)
        if victim == "recorder":
            (recorder,) = [p for p in tree if "labference_ros.nodes.recorder" in " ".join(p.cmdline())]
            recorder.send_signal(signal.SIGKILL)
            launcher.wait(timeout=120)  # the launcher stops the graph: a node died
        else:
            launcher.send_signal(signal.SIGKILL)
            launcher.wait(timeout=30)
            psutil.wait_procs(tree, timeout=60)  # its nodes stop on their own (parent-death signal)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    res = labference("audit", str(bag.parent))
    out = res.stdout + res.stderr
    # Read, and never a plain agree: the bag ends before the episode did (3 partial,
    # 1 disagree); 2 would be "unreadable".
    assert res.returncode in (1, 3), out
    assert "Traceback" not in out and "UNREADABLE" not in out and "ALTERED" not in out
    if victim == "recorder":
        assert "partial" in res.stdout and "truncated but readable" in res.stdout, out
        fixed = labference("recover-bag", str(bag))
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        again = labference("audit", str(bag.parent))
        assert again.returncode in (1, 3) and "truncated" not in again.stdout, again.stdout + again.stderr
        assert "finish status is recovered" in again.stdout, again.stdout
