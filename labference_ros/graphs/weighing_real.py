"""Feedback weighing on a real cell: a Franka arm under franka_ros2 (an FR3 unless
robot_model says panda), a Franka Hand, an MT-SICS balance and a calibrated camera,
scored from sensors alone.

launch/weighing_real.launch.py is generated from this file. It is the sim
graph's evaluator, tested-system and record side unchanged, with the simulator
replaced by what a real cell has:
- the balance: balance_sics on the balance's serial port (for the balance node);
- object poses: fiducial_tracker (ArUco markers on the standards and the sample)
  and world_estimator, which publishes the referee's /evaluator/world_state and
  the checked reading /evaluator/balance_reading (the referee's /balance/reading
  is remapped to it);
- the arm: franka_arm_bridge (the graph's rows to franka_ros2's trajectory controller
  as quintic-interpolated trajectories under the robot's joint names; franka_ros2's
  joint states back under the graph's; stale joint states, robot errors and a robot
  mode other than move become the episode's hardware_fault; the tested system's rows
  too late to follow stop and hold the arm, its own late_rows event, no fault);
- the gripper: franka_gripper_bridge (the graph's gripper command to franka_gripper's
  Grasp and Move actions at /<robot_model>_gripper);
- the scene: the operator sets it up between episodes; the runner's reset asks the
  estimator's scene check (/world_estimator/reset) until it matches the instance.
The arm's controllers (config/franka_controllers.yaml), the camera driver and
franka_gripper run on the robot PC (another computer: discovery:=subnet or
static_peers); this graph does not start them.
It has never run on hardware (docs/real-rig.md says what is tested where).
"""
from __future__ import annotations

from labference_ros.cell.description import common_cell
from labference_ros.core.rates import CAMERA_RATE_HZ
from labference_ros.core.robots import ROBOT_MODELS
from labference_ros.core.trajectory_commands import DELIVERY_S, LATENCY_S
from labference_ros.rosenv import DISCOVERY_SCOPES

from . import weighing_sim
from .graph import Graph, LaunchArgument, NodeSpec, Param

TASK = weighing_sim.TASK
# The sim graph's arguments that mean the same here; the simulator's own ones
# (camera_rate is the driver's, step_mode is realtime on a real arm) are not offered.
_SHARED = ("episodes", "system", "system_params", "agent_url", "agent_model", "condition", "seed", "support",
           "output_dir", "record", "instances", "deadline_s", "free_space_check", "monitor",
           "service_timeout_s", "image_width", "image_height")
ARGUMENTS = tuple(a for a in weighing_sim.ARGUMENTS if a.name in _SHARED) + (
    LaunchArgument("balance_port", "/dev/ttyUSB0", "Serial port of the MT-SICS balance (e.g. a "
                   "/dev/serial/by-id/ path)"),
    LaunchArgument("balance_poll_hz", "10", "How often the balance is asked for a reading (SI) if it has no "
                   "continuous output (SIR), and the pace of retries after a fault"),
    LaunchArgument("markers", "", "JSON: the marker on each tracked object, e.g. '{\"std_10\": {\"id\": 1, "
                   "\"length_m\": 0.02, \"offset_m\": [0, 0, -0.004]}, ...}' (docs/real-rig.md)"),
    LaunchArgument("balance_marker", "true", "true: the balance's pose is sensed from the marker named balance "
                   "in markers, and the scene check refuses a balance more than 1 cm from the instance's place; "
                   "false: the balance is taken to stand where the instance says", choices=("true", "false")),
    LaunchArgument("marker_camera", "front", "The world-fixed camera the markers are tracked on"),
    LaunchArgument("camera_reliability", "reliable", "QoS reliability the policy bridge and the marker tracker "
                   "ask of the camera images: best_effort for a driver that publishes sensor-data QoS",
                   choices=("reliable", "best_effort")),
    LaunchArgument("camera_rate", f"{CAMERA_RATE_HZ:g}", "The camera driver's frame rate in Hz (the policy bridge's observation "
                   "rate)"),
    LaunchArgument("setup_timeout_s", "300", "Seconds the operator has to set each episode's scene up before "
                   "the episode is recorded as not started"),
    LaunchArgument("confirm", "operator", "operator: once its scene matches, an episode starts only after the "
                   "operator confirmed that hands are clear (`labference operator confirm`); auto: at once (a "
                   "stand-in robot)",
                   choices=("auto", "operator")),  # episodes.operator.CONFIRM_MODES
    LaunchArgument("robot_model", common_cell().robot.rig_model, "The arm (core/robots.py): its joint names, "
                   "limits (the safety envelope) and franka_ros2's namespaces", choices=tuple(sorted(ROBOT_MODELS))),
    LaunchArgument("gripper_actions", "", "Namespace of franka_gripper's grasp, move and homing actions (default "
                   "the robot's: /fr3_gripper)"),
    LaunchArgument("discovery", "subnet", "DDS discovery scope: subnet reaches the robot PC (same ROS_DOMAIN_ID, "
                   "distribution and RMW on both); localhost keeps the graph on this computer (a stand-in robot)",
                   choices=tuple(DISCOVERY_SCOPES)),
    LaunchArgument("static_peers", "", "Robot PC host names or addresses, ';'-separated, for unicast discovery "
                   "where multicast does not pass"),
    LaunchArgument("arm_homing", "true", "true: franka_arm_bridge drives the arm to the cell's home pose before "
                   "the session and, after each episode's hand release, lifts the hand clear and homes it again; "
                   "the runner waits for it (operator.jsonl says how each went); false: the robot PC homes the "
                   "arm itself", choices=("true", "false")),
    LaunchArgument("joint_state_timeout_s", "0.25", "Longest gap in the arm's joint states before the episode "
                   "ends as a hardware fault"),
    LaunchArgument("command_latency_s", f"{LATENCY_S:g}", "How long after its stream's first row each row reaches the arm: "
                   "the rows' own lateness, one row interval and command_delivery_s share it (docs/real-rig.md)"),
    LaunchArgument("command_delivery_s", f"{DELIVERY_S:g}", "How long a trajectory message may take to franka_ros2's "
                   "controller; raise it with command_latency_s on a loaded evaluation PC or a busy link"),
)

STEP_MODE = "realtime"  # a real arm does not wait for the policy
# The robot's own limits (position, velocity bounds, acceleration, jerk, between rows too) and the
# workspace box before anything reaches the controllers: safety mode = the robot model.
SAFETY = Param("robot_model")

NODES = (
    NodeSpec("balance", "balance_sics",
             parameters={"port": Param("balance_port"), "poll_hz": Param("balance_poll_hz", float)}),
    NodeSpec("fiducial_tracker", "fiducial_tracker",
             parameters={"task": TASK, "camera": Param("marker_camera"), "markers_json": Param("markers"),
                         "image_reliability": Param("camera_reliability")}),
    NodeSpec("world_estimator", "world_estimator", parameters={"task": TASK, "robot_model": Param("robot_model"),
                                                               "balance_marker": Param("balance_marker", bool)}),
    NodeSpec("referee", "referee", parameters={"task": TASK},
             remappings=(("/balance/reading", "/evaluator/balance_reading"),)),
    NodeSpec("policy_bridge", "policy_bridge",
             parameters={"system": Param("system"), "system_params_json": Param("system_params"),
                         "agent_url": Param("agent_url"), "agent_model": Param("agent_model"),
                         "step_mode": STEP_MODE, "camera_rate": Param("camera_rate", float),
                         "support": Param("support"), "task": TASK, "safety": SAFETY,
                         "image_reliability": Param("camera_reliability")},
             remappings=(("/joint_states", "/arm/joint_states"),)),
    NodeSpec("oracle", "oracle", parameters={"condition": Param("support"), "task_condition": Param("condition")}),
    NodeSpec("recorder", "recorder", parameters={"task": TASK, "enabled": Param("record", bool)}),
    NodeSpec("monitor", "monitor", parameters={}, when="monitor"),
    NodeSpec("franka_arm_bridge", "franka_arm_bridge",
             parameters={"robot_model": Param("robot_model"),
                         "joint_state_timeout_s": Param("joint_state_timeout_s", float),
                         "command_latency_s": Param("command_latency_s", float),
                         "command_delivery_s": Param("command_delivery_s", float),
                         "arm_homing": Param("arm_homing", bool)}),
    NodeSpec("franka_gripper_bridge", "franka_gripper_bridge",
             parameters={"robot_model": Param("robot_model"), "action_namespace": Param("gripper_actions")}),
    NodeSpec("episode_runner", "episode_runner",
             parameters={"episodes": Param("episodes", int), "system": Param("system"),
                         "condition": Param("condition"), "seed": Param("seed", int),
                         "output_dir": Param("output_dir"), "instances": Param("instances"),
                         "deadline_s": Param("deadline_s", float), "step_mode": STEP_MODE,
                         "camera_rate": Param("camera_rate", float),
                         "service_timeout_s": Param("service_timeout_s", float),
                         "record": Param("record", bool), "support": Param("support"), "task": TASK,
                         "image_width": Param("image_width", int), "image_height": Param("image_height", int),
                         "setup": "operator", "setup_timeout_s": Param("setup_timeout_s", float),
                         "confirm": Param("confirm"), "arm_homing": Param("arm_homing", bool)},
             remappings=(("/lab_sim/reset", "/world_estimator/reset"),),
             ends_graph=True),
)

GRAPH = Graph(name="weighing_real", package="labference",
              description="Feedback weighing on a real cell: MT-SICS balance, marker tracking, sensor-only world "
                          "estimator, referee, policy bridge (realtime, the robot's envelope), Franka arm and hand "
                          "bridges (franka_ros2), episode runner with operator set-up",
              arguments=ARGUMENTS, nodes=NODES, task=TASK)
