"""The package builds with colcon in the embedded environment, as on a full ROS 2 install."""
from __future__ import annotations

import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_colcon_build_installs_interfaces_python_package_and_launch(tmp_path):
    proc = subprocess.run([str(REPO / "env" / "colcon_build.sh"), str(tmp_path / "ws")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    install = tmp_path / "ws" / "install" / "labference"
    site = next(install.glob("lib/python3*/site-packages"))
    assert (site / "labference" / "msg" / "_balance_reading.py").is_file()
    assert (site / "labference_ros" / "core" / "measurements.py").is_file()
    assert (install / "share" / "labference" / "package.xml").is_file()
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / "labference").is_file()
