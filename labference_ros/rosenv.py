"""The process environment every Labference ROS process runs with.

DDS stays on loopback: Fast DDS's default discovery multicasts on the LAN, so
every process the project starts (nodes, tests, the embedded launcher) forces
localhost-only discovery here, whatever the user's shell says. Profile files
are dropped too: a wrong or foreign XML profile can reopen LAN transports.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

FORCED = {
    "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
    "ROS_STATIC_PEERS": "",
    "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
}
# Variables that could widen discovery or transports behind our back.
REMOVED = (
    "ROS_LOCALHOST_ONLY",
    "FASTRTPS_DEFAULT_PROFILES_FILE",
    "FASTDDS_DEFAULT_PROFILES_FILE",
    "ROS_DISCOVERY_SERVER",
    "FASTDDS_ENVIRONMENT_FILE",
)
DEFAULT_DOMAIN_ID = "42"


def loopback_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: os.environ) safe for starting a ROS process."""
    env = dict(os.environ if base is None else base)
    for name in REMOVED:
        env.pop(name, None)
    env.update(FORCED)
    env.setdefault("ROS_DOMAIN_ID", DEFAULT_DOMAIN_ID)
    home = env.setdefault("HOME", "/tmp")
    env.setdefault("ROS_LOG_DIR", os.path.join(home, ".ros", "log"))
    env.setdefault("MUJOCO_GL", "egl")
    return env


def apply_loopback() -> None:
    """Force the loopback environment on this process (before rclpy.init)."""
    safe = loopback_environ()
    for name in REMOVED:
        os.environ.pop(name, None)
    os.environ.update(safe)
