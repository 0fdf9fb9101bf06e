"""The process environment every Labference ROS process runs with.

DDS stays on loopback: Fast DDS's default discovery multicasts on the LAN, so
every process the project starts (nodes, tests, the embedded launcher) forces
localhost-only discovery here, whatever the user's shell says. Profile files
are dropped too: a wrong or foreign XML profile can reopen LAN transports.

The one exception is a real rig's graph, whose robot PC (franka_ros2's
ros2_control_node) is another computer: its launch argument `discovery`
(subnet) and `static_peers` reach the nodes through LABFERENCE_DISCOVERY and
LABFERENCE_STATIC_PEERS. A node honours them (apply_loopback), so whoever
starts nodes sets them: the launcher from the graph's arguments
(loopback_environ drops the caller's, discovery_environ adds the graph's),
every generated launch file for every graph (`localhost` where the graph has
no such argument), and the tests drop them from their own environment
(test/conftest.py). A shell variable alone never widens a graph's discovery.
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
    "LABFERENCE_DISCOVERY",
    "LABFERENCE_STATIC_PEERS",
)
DISCOVERY_ENV = "LABFERENCE_DISCOVERY"
PEERS_ENV = "LABFERENCE_STATIC_PEERS"
# Launch argument value -> ROS_AUTOMATIC_DISCOVERY_RANGE (ROS 2 Iron and later).
DISCOVERY_SCOPES = {"localhost": "LOCALHOST", "subnet": "SUBNET"}
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
    # A native crash while a node imports or is built (before run_node) still leaves its
    # Python stack on stderr, under the node's name in the launch output.
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def discovery_environ(scope: str, static_peers: str = "") -> dict[str, str]:
    """What a launcher adds to loopback_environ() for a graph that reaches another computer:
    scope `localhost` (the default: nothing wider) or `subnet`, and static peers (host names
    or addresses, `;`-separated: unicast discovery of the robot PC where multicast is blocked)."""
    if scope not in DISCOVERY_SCOPES:
        raise ValueError(f"discovery must be one of {', '.join(DISCOVERY_SCOPES)}, got {scope!r}")
    peers = ";".join(p.strip() for p in static_peers.replace(",", ";").split(";") if p.strip())
    if any(c.isspace() for c in peers):
        raise ValueError(f"static_peers: host names or addresses separated by ';', got {static_peers!r}")
    env = {DISCOVERY_ENV: scope}
    if peers:
        env[PEERS_ENV] = peers
    return env


def apply_loopback() -> None:
    """Force the loopback environment on this process (before rclpy.init), widened only
    as far as the launcher's discovery_environ says."""
    scope = os.environ.get(DISCOVERY_ENV, "localhost")
    peers = os.environ.get(PEERS_ENV, "")
    safe = loopback_environ()
    for name in REMOVED:
        os.environ.pop(name, None)
    os.environ.update(safe)
    if scope in DISCOVERY_SCOPES:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = DISCOVERY_SCOPES[scope]
    os.environ["ROS_STATIC_PEERS"] = peers
