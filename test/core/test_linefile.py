"""JSONL records on a disk that fills up: whole lines or none, and the writer is told."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from labference_ros.core.linefile import LineFile
from labference_ros.core.records import RunRecords, read_jsonl, write_json_atomic


def assert_whole_lines(path):
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), data[-80:]
    return [json.loads(line) for line in data.splitlines()]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs (root only: mount needs it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the file-size-limit test covers the same path")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_full_tmpfs_leaves_whole_lines_and_raises_enospc(small_tmpfs):
    f = LineFile(small_tmpfs / "events.jsonl")
    line = json.dumps({"record": "event", "pad": "x" * 700})
    written = 0
    with pytest.raises(OSError) as err:
        for _ in range(1000):
            f.write_line(line)
            written += 1
    assert err.value.errno == 28 and str(small_tmpfs / "events.jsonl") == err.value.filename
    rows = assert_whole_lines(small_tmpfs / "events.jsonl")
    assert len(rows) == written > 10
    with pytest.raises(OSError):  # a failed file stays failed: nothing more is appended
        f.write_line("{}")
    assert len(assert_whole_lines(small_tmpfs / "events.jsonl")) == written
    f.close()
    # Atomic JSON on a full disk: the old file stays, no tmp file is left behind.
    with pytest.raises(OSError):
        write_json_atomic(small_tmpfs / "scores.json", {"pad": "y" * 100000})
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["events.jsonl"]


def test_run_records_on_a_full_tmpfs(small_tmpfs):
    records = RunRecords(small_tmpfs / "ep", {"episode_id": "e"})
    with pytest.raises(OSError):
        for k in range(10000):
            records.write({"record": "event", "event_id": f"e{k}", "t": float(k), "detail": {"pad": "z" * 200}})
    records.close()
    for name in ("events.jsonl", "observations.jsonl", "online_scores.jsonl"):
        assert_whole_lines(small_tmpfs / "ep" / name)
    assert read_jsonl(small_tmpfs / "ep" / "events.jsonl")  # the reader's strict mode accepts it


def test_file_size_limit_cuts_back_the_torn_line(tmp_path):
    # Without root: RLIMIT_FSIZE makes the write that crosses the limit short, then EFBIG.
    path = tmp_path / "limited.jsonl"
    code = textwrap.dedent(f"""
        import json, resource, signal
        from labference_ros.core.linefile import LineFile
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (10000, 10000))
        f = LineFile({str(path)!r}, fsync=False)
        n = 0
        try:
            while True:
                f.write_line(json.dumps({{"n": n, "pad": "q" * 333}}))
                n += 1
        except OSError as exc:
            print(n, exc.errno)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    rows = assert_whole_lines(path)
    assert len(rows) == int(out[0]) and rows[-1]["n"] == len(rows) - 1
    assert int(out[1]) == 27  # EFBIG
    assert path.stat().st_size <= 10000
