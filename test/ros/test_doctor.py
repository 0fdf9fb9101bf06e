from __future__ import annotations

import pathlib
import subprocess
import sys

BIN = pathlib.Path(sys.executable).parent


def test_doctor_reports_ros_rmw_and_interfaces():
    proc = subprocess.run([str(BIN / "labference"), "doctor"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {line.split()[1]: line for line in proc.stdout.splitlines() if line.startswith("ok ")}
    assert "rmw_fastrtps_cpp" in lines["RMW"]
    assert "rclpy" in lines and "9.1.2" in lines["rclpy"]
    assert "BalanceReading" in proc.stdout and "labference" in lines
    assert "LOCALHOST" in proc.stdout


def test_doctor_rig_names_a_trajectory_controller_that_is_not_active_loaded_or_listed():
    from labference_ros.cli.rig_check import controller_check

    topic = "/joint_trajectory_controller/joint_trajectory"
    kind = "joint_trajectory_controller/JointTrajectoryController"
    active = controller_check({"joint_trajectory_controller": ("active", kind)}, "joint_trajectory_controller",
                              topic, 1)
    assert active.ok and active.value.startswith("joint_trajectory_controller active")
    inactive = controller_check({"joint_trajectory_controller": ("inactive", kind)},
                                "joint_trajectory_controller", topic, 1)
    assert not inactive.ok and "inactive" in inactive.value and "activate" in inactive.hint
    missing = controller_check({"joint_state_broadcaster": ("active", "")}, "joint_trajectory_controller", topic, 0)
    assert not missing.ok and missing.value == ("joint_trajectory_controller not loaded "
                                                "(loaded: joint_state_broadcaster)")
    silent = controller_check(None, "joint_trajectory_controller", topic, 1)
    assert not silent.ok and silent.value.startswith("/controller_manager/list_controllers: no answer")
    # Active but nothing listens on its topic: the rows would go nowhere.
    assert not controller_check({"joint_trajectory_controller": ("active", kind)}, "joint_trajectory_controller",
                                topic, 0).ok
