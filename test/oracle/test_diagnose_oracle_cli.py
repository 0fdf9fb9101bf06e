"""`labference diagnose-oracle` as a user runs it: a fresh shell without
MUJOCO_GL, a new population, geometry support for the mislocator."""
import json
import os
import subprocess
import sys

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


def test_diagnose_oracle_runs_headless_from_a_plain_shell(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    out = tmp_path / "gains.json"
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(tmp_path / "pop.jsonl"), "--new", "1",
                           "--system", "mislocator", "--support", "replace:geometry", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1/1 checkpoints verified" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("replace:geometry"))
    assert "| 1/0 | +1.00 |" in row  # completion restored on the one checkpoint
    assert json.loads(out.read_text())
