"""`labference doctor --rig`: is a real cell ready for weighing_real.launch.py?

From the evaluation PC, with the discovery scope the real launch uses: the robot
PC's joint states (franka_ros2's names for the robot model, and their rate), the
robot state (mode and errors), the trajectory controller active (controller_manager's
listing) and listening, the hand's
move, grasp and homing actions, the balance answering MT-SICS on its port, and the
marker camera's images. Each check says what it saw and, when it fails, what to do.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from labference_ros.core.robots import robot_model
from labference_ros.rosenv import DISCOVERY_ENV, PEERS_ENV, discovery_environ

ROBOT_STATE_TOPIC = "/franka_robot_state_broadcaster/robot_state"
CONTROLLER_LIST = "/controller_manager/list_controllers"


@dataclass
class RigCheck:
    name: str
    ok: bool
    value: str
    hint: str = ""


def _spin_until(executor, condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    return condition()


def check_balance(port: str) -> RigCheck:
    if not port:
        return RigCheck("balance", False, "no port given", "pass --balance-port /dev/serial/by-id/...")
    if not os.path.exists(port):
        return RigCheck("balance", False, f"{port}: no such port", "check the cable and the by-id path")
    from labference_ros.devices.sics_balance import SicsBalance

    balance = SicsBalance(port)
    try:
        reading = balance.read()
    finally:
        balance.close()
    if not reading.valid:
        return RigCheck("balance", False, reading.invalid_reason,
                        "set the balance's RS232 to 9600 8N1 and MT-SICS (docs/real-rig.md)")
    return RigCheck("balance", True, f"{port}: {reading.displayed_g:.4f} g, {'stable' if reading.stable else 'dynamic'}")


def controller_check(listing: dict[str, tuple[str, str]] | None, controller: str, topic: str,
                     listening: int) -> RigCheck:
    """The trajectory controller as controller_manager lists it (name -> (state, type); None:
    no answer) and its trajectory topic's subscribers."""
    hint = f"spawn and activate {controller} (config/franka_controllers.yaml)"
    if listing is None:
        return RigCheck("trajectory controller", False, f"{CONTROLLER_LIST}: no answer ({topic}: "
                        f"{listening} subscriber(s))", "is ros2_control_node running on the robot PC?")
    if controller not in listing:
        loaded = ", ".join(sorted(listing)) or "none"
        return RigCheck("trajectory controller", False, f"{controller} not loaded (loaded: {loaded})", hint)
    state, kind = listing[controller]
    ok = state == "active" and listening > 0
    return RigCheck("trajectory controller", ok, f"{controller} {state} ({kind}); {topic}: {listening} "
                    "subscriber(s)", hint)


def check_ros(robot_name: str, marker_camera: str, timeout_s: float) -> list[RigCheck]:
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image, JointState

    from labference_ros.devices.franka_arm import ROBOT_MODE_MOVE, ROBOT_MODE_NAMES
    from labference_ros.nodes.runtime import init_ros

    robot = robot_model(robot_name)
    rclpy = init_ros([])
    node = rclpy.create_node("labference_rig_check")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    out = []
    try:
        stamps: list[float] = []
        names: list[str] = []

        def on_joints(msg):
            names[:] = list(msg.name)
            if all(j in msg.name for j in robot.arm_joints):
                stamps.append(time.monotonic())

        node.create_subscription(JointState, "/joint_states", on_joints, 10)
        states: list = []
        try:
            from franka_msgs.action import Grasp, Homing, Move
            from franka_msgs.msg import FrankaRobotState
        except ImportError:
            out.append(RigCheck("franka_msgs", False, "not importable", "env/bootstrap.sh builds env/franka_msgs"))
            return out
        try:
            from controller_manager_msgs.srv import ListControllers
        except ImportError:  # the other checks go on; the controller's state stays unknown
            ListControllers = None
            out.append(RigCheck("controller_manager_msgs", False, "not importable",
                                "env/bootstrap.sh builds env/controller_manager_msgs"))
        node.create_subscription(FrankaRobotState, ROBOT_STATE_TOPIC, states.append, 10)
        images: list = []
        camera_topic = f"/cameras/{marker_camera}/image_raw"
        node.create_subscription(Image, camera_topic, images.append, qos_profile_sensor_data)
        clients = {name: ActionClient(node, kind, f"{robot.gripper_actions}/{name}")
                   for name, kind in (("move", Move), ("grasp", Grasp), ("homing", Homing))}
        trajectory_topic = f"/{robot.trajectory_controller}/joint_trajectory"
        controllers = node.create_client(ListControllers, CONTROLLER_LIST) if ListControllers else None
        _spin_until(executor, lambda: len(stamps) >= 10 and states and images
                    and all(c.server_is_ready() for c in clients.values())
                    and (controllers is None or controllers.service_is_ready())
                    and node.count_subscribers(trajectory_topic) > 0, timeout_s)
        listing = _list_controllers(executor, controllers, timeout_s) if controllers else None
        if len(stamps) >= 2:
            rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
            out.append(RigCheck("robot joint states", True, f"/joint_states with {robot.name}_joint1..7 at {rate:.0f} Hz"))
        else:
            seen = f"joints {names}" if names else "nothing"
            out.append(RigCheck("robot joint states", False, f"/joint_states: {seen} within {timeout_s:g} s",
                                "is franka_ros2 running with arm_id " + robot.name + ", same ROS_DOMAIN_ID, "
                                "discovery reaching the robot PC (--discovery subnet, --static-peers)?"))
        if states:
            mode = int(states[-1].robot_mode)
            errors = [f for f in states[-1].current_errors.get_fields_and_field_types()
                      if getattr(states[-1].current_errors, f)]
            ok = mode == ROBOT_MODE_MOVE and not errors
            out.append(RigCheck("robot state", ok, f"mode {ROBOT_MODE_NAMES.get(mode, mode)}"
                                + (f", errors {', '.join(errors)}" if errors else ""),
                                "activate joint_trajectory_controller (it acknowledges a reflex); clear errors "
                                "in Desk"))
        else:
            out.append(RigCheck("robot state", False, f"nothing on {ROBOT_STATE_TOPIC}",
                                "spawn franka_robot_state_broadcaster (config/franka_controllers.yaml)"))
        listening = node.count_subscribers(trajectory_topic)
        if controllers is None:
            out.append(RigCheck("trajectory controller", listening > 0, f"{trajectory_topic}: {listening} "
                                "subscriber(s); its state unknown (no controller_manager_msgs)",
                                f"spawn {robot.trajectory_controller} (config/franka_controllers.yaml)"))
        else:
            out.append(controller_check(listing, robot.trajectory_controller, trajectory_topic, listening))
        ready = [n for n, c in clients.items() if c.server_is_ready()]
        out.append(RigCheck("gripper actions", len(ready) == len(clients),
                            f"{robot.gripper_actions}: {', '.join(ready) or 'none'} of move, grasp, homing",
                            "start franka_gripper with arm_id " + robot.name))
        if images:
            image = images[-1]
            out.append(RigCheck("marker camera", True, f"{camera_topic}: {image.width}x{image.height} {image.encoding}"))
        else:
            out.append(RigCheck("marker camera", False, f"no image on {camera_topic}", "start the camera driver"))
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()
    return out


def _list_controllers(executor, client, timeout_s: float) -> dict[str, tuple[str, str]] | None:
    """controller_manager's controllers (name -> (state, type)); None when it does not answer."""
    if not client.service_is_ready():
        return None
    future = client.call_async(client.srv_type.Request())
    if not _spin_until(executor, future.done, timeout_s) or future.result() is None:
        return None
    return {c.name: (c.state, c.type) for c in future.result().controller}


def run_rig_check(robot: str, balance_port: str, marker_camera: str, discovery: str, static_peers: str,
                  timeout_s: float) -> int:
    os.environ.update(discovery_environ(discovery, static_peers))  # read by init_ros (rosenv.apply_loopback)
    if PEERS_ENV not in discovery_environ(discovery, static_peers):
        os.environ.pop(PEERS_ENV, None)
    checks = check_ros(robot, marker_camera, timeout_s) + [check_balance(balance_port)]
    width = max(len(c.name) for c in checks)
    scope = f"{os.environ.get(DISCOVERY_ENV)} (ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '42')})"
    print(f"{'':7} {'discovery':<{width}}  {scope}")
    problems = 0
    for c in checks:
        print(f"{'ok ' if c.ok else 'MISSING':7} {c.name:<{width}}  {c.value}")
        if not c.ok:
            problems += 1
            if c.hint:
                print(f"{'':7} {'':<{width}}  fix: {c.hint}")
    print(f"\n{problems} problem(s)" if problems else "\nthe rig is ready")
    return 1 if problems else 0
