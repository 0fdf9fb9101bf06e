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


def test_new_population_of_extended_checkpoints_after_a_prefix(tmp_path):
    pop = tmp_path / "pop.jsonl"
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(pop), "--new", "1", "--condition", "extended",
                           "--prefix", "remove:std_20", "--system", "misreader", "--support", "replace:state",
                           "--budget-s", "2", "--records", str(tmp_path / "records")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (spec,) = [json.loads(line) for line in pop.read_text().splitlines()]
    assert spec["instance"]["condition"] == "extended"
    assert spec["prefix"] == [{"type": "remove", "object": "std_20", "destination": "table"}]
    assert spec["checkpoint_id"].endswith(":p1")
    # Whether the prefix could be carried out or not, the checkpoint is in the table:
    # verified, or preparation_failed with its reason (an unresolved pair).
    assert "1/1 checkpoints verified" in proc.stdout or "preparation_failed" in proc.stdout
    assert "checkpoint populations:" in proc.stdout


def test_a_prefix_that_is_not_an_operation_is_a_usage_error(tmp_path):
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(tmp_path / "pop.jsonl"), "--new", "1",
                           "--prefix", "lift:std_20", "--system", "misreader", "--support", "replace:state"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "expected add:OBJECT or remove:OBJECT" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "pop.jsonl").exists()
