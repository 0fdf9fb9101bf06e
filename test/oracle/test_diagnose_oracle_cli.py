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
    # extended-1-0000 starts with std_10 and std_100 on the pan: the prefix lifts std_20 and
    # puts it back on its table spot, and the start is verified after it.
    assert "1/1 checkpoints verified" in proc.stdout
    assert "checkpoint populations:" in proc.stdout
    for condition in ("base", "replace_state"):
        episode = tmp_path / "records" / "misreader" / condition / "episodes" / "extended-1-0000_p1"
        assert json.loads((episode / "run.json").read_text())["checkpoint"]["prefix"] == spec["prefix"]
    # A second run never appends to the first one's records.
    again = subprocess.run([LABFERENCE, "diagnose-oracle", str(pop), "--system", "misreader", "--support",
                            "replace:state", "--records", str(tmp_path / "records")],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "is not empty" in again.stderr and "Traceback" not in again.stderr


def test_a_prefix_that_is_not_an_operation_is_a_usage_error(tmp_path):
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(tmp_path / "pop.jsonl"), "--new", "1",
                           "--prefix", "lift:std_20", "--system", "misreader", "--support", "replace:state"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "expected add:OBJECT or remove:OBJECT" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "pop.jsonl").exists()


def test_a_centrifuge_population_of_another_condition_than_its_controlled_pairs_is_refused(tmp_path):
    """The centrifuge's --new writes its controlled destination pairs (extended) only: asked for
    basic, it says so rather than writing extended pairs under the basic name."""
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(tmp_path / "pop.jsonl"), "--task", "centrifuge_loading",
                           "--new", "1", "--condition", "basic", "--system", "scripted_expert"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--new writes no 'basic' population of centrifuge_loading (it writes: extended)" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "pop.jsonl").exists()
