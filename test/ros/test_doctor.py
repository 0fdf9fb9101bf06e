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
