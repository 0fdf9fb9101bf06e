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
    # Monitoring: the RViz config, the cell and Panda URDFs with the Panda's meshes.
    share = install / "share" / "labference"
    assert (share / "rviz" / "weighing.rviz").is_file()
    assert (share / "urdf" / "panda.urdf").is_file()
    assert (share / "meshes" / "panda" / "link0_0.obj").is_file()
    # env/tf2_msgs (embedded only) is ignored: a full install keeps the distribution's tf2_msgs.
    assert not (tmp_path / "ws" / "install" / "tf2_msgs").exists()
