"""A node started as `ros2 launch` starts it (its own process, none of the
launcher's environment, no display) chooses a headless GL backend itself before
MuJoCo is imported, and lab_sim renders its cameras."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from rosproc import Proc
from ros_domains import own_domain

REPO = pathlib.Path(__file__).resolve().parents[2]
PROBE = REPO / "test" / "peers" / "render_probe.py"
LAUNCHER_SET = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY", "LABFERENCE_DOMAIN_HELD",
                "LABFERENCE_RUN_DIR", "LABFERENCE_STOP_REASON_FILE")


def bare_environ(domain: str) -> dict[str, str]:
    """The caller's environment without anything `labference launch` sets, as a shell
    with ROS 2 sourced would hand it to `ros2 launch`."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_SET}
    env["ROS_DOMAIN_ID"] = domain
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return env


def test_importing_a_node_module_selects_egl_before_mujoco_when_nothing_is_set():
    code = ("import os, sys; import labference_ros.nodes.lab_sim; import mujoco; "
            "print(os.environ.get('MUJOCO_GL'), mujoco.GLContext.__module__)")
    res = subprocess.run([sys.executable, "-c", code], env=bare_environ("0"), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    backend, context = res.stdout.split()
    assert backend == "egl" and context.startswith("mujoco.egl")


def test_an_explicit_backend_is_kept():
    code = "import os; import labference_ros.nodes; print(os.environ['MUJOCO_GL'])"
    env = {**bare_environ("0"), "MUJOCO_GL": "osmesa"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "osmesa", res.stderr


def test_lab_sim_started_as_ros2_launch_starts_it_renders(tmp_path):
    with own_domain() as domain:
        env = bare_environ(domain)
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-r", "__node:=lab_sim",
                    "-p", "step_mode:=realtime", "-p", "image_width:=160", "-p", "image_height:=120"], env=env)
        probe = None
        try:
            probe = Proc([sys.executable, str(PROBE)], env={**env, "PYTHONPATH": str(REPO / "test" / "peers")})
            lines = probe.wait_for("RENDERED", timeout=180)
            assert lines, probe.seen[-20:] + sim.seen[-20:]
            colours, size = lines[0].split()[1:]
            assert size == "160x120" and int(colours) > 16
            assert sim.popen.poll() is None, sim.seen[-20:]
        finally:
            if probe is not None:
                probe.stop()
            sim.stop()
