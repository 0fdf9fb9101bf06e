"""A run whose disk fills up mid-episode (a small tmpfs, filled by the test once
the episode is recording): every writer stops cleanly, the console says why,
the exit status says not every episode was scored, and what is on disk
parses: no JSONL file ends in a partial line, no half-written JSON file.
Root only (mounting a tmpfs); skipped with the reason otherwise."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "policies"))
from graph_checks import LABFERENCE, assert_records_parse  # noqa: E402


@pytest.fixture
def tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the ENOSPC path is also unit-tested in test/core/test_linefile.py)")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(directory: Path) -> None:
    with open(directory / "filler", "wb", buffering=0) as f:
        block = b"\0" * (1 << 20)
        try:
            while True:
                f.write(block)
        except OSError:
            pass
        try:  # the last bytes below a block
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


@pytest.mark.slow
def test_disk_fills_up_mid_run(tmpfs):
    out = tmpfs / "run"
    # deadline_s:=20 keeps the run's estimated size under the tmpfs: the free-space check lets it start.
    proc = subprocess.Popen([LABFERENCE, "launch", "weighing_sim.launch.py", "episodes:=2", "record:=true",
                             "deadline_s:=20",
                             "image_width:=64", "image_height:=48", "service_timeout_s:=60",
                             f"output_dir:={out}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        # Once the first episode's records are being written, take every free byte.
        while time.monotonic() < deadline and not list(out.glob("episodes/*/events.jsonl")):
            time.sleep(0.2)
        assert list(out.glob("episodes/*/events.jsonl")), "the first episode never started"
        time.sleep(1.0)
        fill(tmpfs)
        text, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in text
    assert proc.returncode in (3, 4), text[-4000:]  # 3: ran, not all scored; 4: stopped early (records unwritable)
    assert "No space left on device" in text
    # Every failed write names its file.
    assert "cannot write None" not in text and "(None)" not in text, text[-4000:]
    lines = [line for line in text.splitlines() if "[episode_runner] episode 0000_" in line]
    assert lines and lines[0].endswith("[disk_full]"), text[-4000:]
    attempts = assert_records_parse(out)  # attempts.jsonl itself may not have fitted
    assert all(a["status"] == "error" and a["error_kind"] == "disk_full" for a in attempts[:1]), attempts
