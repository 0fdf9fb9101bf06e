"""The layer rules (.importlinter) hold, and the checker does fail on a violation."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
LINT = pathlib.Path(sys.executable).parent / "lint-imports"


def _lint(root: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(root / ".importlinter"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layer_contracts_hold():
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_tested_system_importing_the_simulator_breaks_a_contract(tmp_path):
    shutil.copytree(REPO / "labference_ros", tmp_path / "labference_ros",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", tmp_path / ".importlinter")
    (tmp_path / "labference_ros" / "policies" / "peeking.py").write_text(
        "from labference_ros.sim.mujoco_backend import MujocoBackend  # a leak the rules forbid\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "tested systems never import the simulator" in result.stdout
    assert "labference_ros.policies.peeking -> labference_ros.sim.mujoco_backend" in result.stdout


def _lint_with(tmp_path, relative: str, source: str) -> subprocess.CompletedProcess:
    """lint-imports over a copy of the package with one more module in it."""
    shutil.copytree(REPO / "labference_ros", tmp_path / "labference_ros",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", tmp_path / ".importlinter")
    (tmp_path / "labference_ros" / relative).write_text(source)
    return _lint(tmp_path)


def test_a_shared_layer_naming_a_family_breaks_a_contract(tmp_path):
    result = _lint_with(tmp_path, "oracle/peeking.py",
                        "from labference_ros.tasks.weighing.objects import STANDARDS  # not through the registry\n")
    said = " ".join(result.stdout.split())  # the report wraps its lines
    assert result.returncode != 0
    assert "no layer outside a family imports it" in said
    assert "labference_ros.oracle.peeking -> labference_ros.tasks.weighing.objects" in said


def test_a_family_importing_another_breaks_a_contract(tmp_path):
    result = _lint_with(tmp_path, "tasks/placement_recall/borrowed.py",
                        "from labference_ros.tasks.centrifuge.rotor import slot_frames  # a family's own piece\n")
    said = " ".join(result.stdout.split())
    assert result.returncode != 0
    assert "task families never import each other" in said
    assert "labference_ros.tasks.placement_recall.borrowed -> labference_ros.tasks.centrifuge.rotor" in said
