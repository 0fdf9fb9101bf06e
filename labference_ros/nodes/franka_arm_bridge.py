"""franka_arm_bridge: the graph's arm rows to a Franka under franka_ros2, and the
arm's faults back to the graph as hardware faults.

Commands. The policy bridge sends each row on /<graph_controller>/joint_trajectory
(the graph's own name, the ActionSpec's joint order, as lab_sim executes it). Each
row goes to franka_ros2's /<controller>/joint_trajectory under the robot's joint
names (core.robots: fr3_joint1..7 on an FR3) in a message with positions,
velocities and accelerations: the points of the path not yet reached and a tail
that brings the arm to rest (core.trajectory_commands.RowStream; the trajectory
controller interpolates a quintic at 1 kHz, without the velocity steps of
position-only points). A row is reached `command_latency_s` (0.06) after the first
row of its stream arrived, on the rows' own stamps, so rows delivered up to
latency - interval - command_delivery_s late land on the same path, and each message
may take up to command_delivery_s (0.005) to reach the controller: a later row starts
a new path, whose points lie far enough ahead. Each message is stamped in the
robot PC's clock: its offset from this PC's is estimated from franka_ros2's
joint-state stamps (the smallest receipt delay seen), so a clock offset between
the two PCs changes nothing. The next row replaces the tail; a stream that stops
leaves the arm decelerating.

Late rows (devices/franka_arm.CommandGate). Every message's motion is checked at
1 kHz against the robot's limits before it goes out. A row later than the latency,
or after a gap, that the arm could not follow within them (mid-motion the path would
have to jump from the braking tail back to the rows) is the tested system's
lateness, not a fault: nothing is sent, so the last message's tail brings the arm
to rest within the limits and the controller holds it there; /arm/late_rows
(std_msgs/String, JSON: episode_id, cause, t, and the row's row_stamp and row_age_s,
receipt less stamp) says so once per stop, and the
episode runner keeps it in the attempt's `system_events` (the episode goes on and
is scored). The late rows that follow are refused too; the first other row that can
be followed (from where the arm stands) resumes the stream.

Joint states. franka_ros2's /joint_states (the robot's names) are republished on
/arm/joint_states under the graph's names (the simulated arm's, which the tested
systems and the recorder read), the same positions, velocities and stamps.

Faults (devices/franka_arm.FaultWatch): joint states older than
joint_state_timeout_s, an error flag or a robot mode other than move in
franka_robot_state_broadcaster's robot state, the trajectory controller not active
in controller_manager's listing (`<controller_manager>/list_controllers`, asked every
0.5 s with `watch_controllers`); and a message of rows on time since the
stream began that the arm would answer with a reflex: it is not sent. The first fault during an episode
(the one /policy_bridge/status says is running) stops the rows (none is forwarded
until the next episode), asks /policy_bridge/pause with reason
`hardware_fault: <cause>`, and publishes /hardware/fault (std_msgs/String, JSON:
episode_id, cause, t), which the episode runner records as the episode's
`hardware_fault`: an evaluation-validity error, outside the tested system's
denominators. Recovering the arm is franka_ros2's (its controller acknowledges a
reflex when it is activated again); a fault still there when the next episode
starts is that episode's fault too.

Homing and retreat (devices/arm_moves.ArmChores, with `arm_homing`): before the
session the arm is driven to its home pose (`home`, the cell's), and after each
episode, once the hand's bridge says it released what the hand held (on
/operator/events; at most `release_wait_s`, 10, later), the hand is lifted `lift_m`
(0.05 m) straight up and the arm is homed, so the operator can set the next scene.
Each move is one trajectory message (points 50 ms apart, positions, velocities,
accelerations; jerk-limited at a quarter of the robot's limits) checked at 1 kHz
against the robot's limits before it is sent; a move that would leave them, or an arm
not ready (a fault), is refused; a fault or stale joint states during the move, or a
goal not reached, fail it. Each verdict goes to /operator/events (JSON `episode_id`,
'' for the session, `device` arm, `action` lift or home, `detail`: done, refused:
<reason>, failed: <cause>), which the episode runner writes to operator.jsonl and
waits for before the next episode. No rows are sent while the arm homes.

Parameters: robot_model (fr3), graph_controller (panda_arm_controller),
controller (the robot's trajectory controller, joint_trajectory_controller),
control_interval_s (0.02), command_latency_s (0.06), command_delivery_s (0.005), joint_state_timeout_s (0.25),
watch_robot_state (true), watch_controllers (true), controller_manager (/controller_manager),
arm_homing (false; the real launch's argument, true), home, lift_m, release_wait_s.
"""
from __future__ import annotations

import json
import time
from collections import deque

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from labference.srv import SetPause
from labference_ros.cell.description import common_cell
from labference_ros.core.robots import robot_model
from labference_ros.core.trajectory_commands import DELIVERY_S, LATENCY_S, ROW_INTERVAL_S
from labference_ros.devices.arm_moves import ArmChores
from labference_ros.devices.franka_arm import CommandGate, FaultWatch
from labference_ros.nodes.runtime import run_node

ROBOT_STATE_TOPIC = "/franka_robot_state_broadcaster/robot_state"
FAULT_TOPIC = "/hardware/fault"
LATE_TOPIC = "/arm/late_rows"  # the tested system's rows came too late to follow: not a fault
GRAPH_JOINT_STATES = "/arm/joint_states"
WATCH_HZ = 20.0
OPERATOR_EVENTS = "/operator/events"  # latched, as the hand's bridge publishes them
AT_REST_RAD_S = 0.01
CONTROLLER_MANAGER = "/controller_manager"
CONTROLLER_POLL_S = 0.5  # how often the controllers' states are asked for
CONTROLLER_QUERY_S = 2.0  # an unanswered query is asked again after this


def _duration(seconds: float) -> Duration:
    ns = int(round(seconds * 1e9))
    return Duration(sec=ns // 10**9, nanosec=ns % 10**9)


def trajectory_message(command) -> JointTrajectory:
    """A core.trajectory_commands.TrajectoryCommand as franka_ros2's message (stamp zero)."""
    traj = JointTrajectory(joint_names=list(command.joint_names))
    for t, q, dq, ddq in zip(command.times, command.positions, command.velocities, command.accelerations):
        traj.points.append(JointTrajectoryPoint(positions=[float(x) for x in q], velocities=[float(x) for x in dq],
                                                accelerations=[float(x) for x in ddq],
                                                time_from_start=_duration(float(t))))
    return traj


class FrankaArmBridge(Node):
    def __init__(self):
        super().__init__("franka_arm_bridge")
        v = {name: self.declare_parameter(name, default).value for name, default in (
            ("robot_model", "fr3"), ("graph_controller", "panda_arm_controller"), ("controller", ""),
            ("control_interval_s", ROW_INTERVAL_S), ("command_latency_s", LATENCY_S),
            ("command_delivery_s", DELIVERY_S), ("joint_state_timeout_s", 0.25),
            ("watch_robot_state", True), ("arm_homing", False), ("home", list(common_cell().robot.home)),
            ("lift_m", 0.05), ("release_wait_s", 10.0), ("watch_controllers", True),
            ("controller_manager", CONTROLLER_MANAGER))}
        self.robot = robot_model(str(v["robot_model"]))
        graph_robot = common_cell().robot  # the graph's arm, alike in every cell
        self.graph_arm = graph_robot.arm_joints
        self.graph_names = dict(zip(self.robot.arm_joints + self.robot.finger_joints,
                                    graph_robot.arm_joints + graph_robot.finger_joints))
        self.interval = float(v["control_interval_s"])
        self.watch = FaultWatch(joint_state_timeout_s=float(v["joint_state_timeout_s"]))
        self.watch_robot_state = bool(v["watch_robot_state"])
        self.latency = float(v["command_latency_s"])
        self.delivery = float(v["command_delivery_s"])
        self.gate = CommandGate(self.robot, self.interval, self.latency, self.delivery)
        # Robot PC's clock minus this one's, less the smallest delivery delay: joint-state stamp minus receipt.
        self.clock_offsets: deque[float] = deque(maxlen=300)
        self.robot_offset = 0.0  # the estimate a path's messages are stamped with (fixed while it runs)
        self.offset_of_path = -1
        self.measured: np.ndarray | None = None
        self.moving = False  # the measured arm not at rest
        self.chores: ArmChores | None = None
        if bool(v["arm_homing"]):
            self.chores = ArmChores(self.robot, np.asarray(v["home"], float), float(v["lift_m"]),
                                    float(v["release_wait_s"]))
            self.chores.session()
        self.episode = ""
        self.fault = ""  # the fault that stopped the current episode's rows
        self.said = ""
        qos = QoSProfile(depth=10)
        controller = str(v["controller"]) or self.robot.trajectory_controller
        self.pub_traj = self.create_publisher(JointTrajectory, f"/{controller}/joint_trajectory", qos)
        self.pub_joints = self.create_publisher(JointState, GRAPH_JOINT_STATES, qos)
        self.pub_fault = self.create_publisher(String, FAULT_TOPIC, qos)
        self.pub_late = self.create_publisher(String, LATE_TOPIC, qos)
        self.pause = self.create_client(SetPause, "/policy_bridge/pause")
        if self.chores is not None:
            latched = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.pub_events = self.create_publisher(String, OPERATOR_EVENTS, latched)
            self.create_subscription(String, OPERATOR_EVENTS, self.on_operator_event, latched)
        self.create_subscription(JointTrajectory, f"/{v['graph_controller']}/joint_trajectory", self.on_rows, qos)
        self.create_subscription(JointState, "/joint_states", self.on_joint_states, qos)
        self.create_subscription(String, "/policy_bridge/status", self.on_status, qos)
        if self.watch_robot_state:
            try:
                from franka_msgs.msg import FrankaRobotState
            except ImportError:
                self.get_logger().error("franka_msgs is missing: the robot state's errors and mode are not watched")
            else:
                self.create_subscription(FrankaRobotState, ROBOT_STATE_TOPIC, self.on_robot_state, qos)
        self.controller = controller
        self.listing = None  # the controller_manager query in flight, and when it was asked
        self.listed_at = 0.0
        if bool(v["watch_controllers"]):
            try:
                from controller_manager_msgs.srv import ListControllers
            except ImportError:
                self.get_logger().error("controller_manager_msgs is missing: the controllers' states are not watched")
            else:
                self.ListControllers = ListControllers
                self.list_controllers = self.create_client(ListControllers,
                                                           f"{v['controller_manager']}/list_controllers")
                self.create_timer(CONTROLLER_POLL_S, self.ask_controllers)
        self.create_timer(1.0 / WATCH_HZ, self.check)

    # -- commands ---------------------------------------------------------------------------------------------
    def on_rows(self, msg: JointTrajectory) -> None:
        if self.fault or not msg.points:
            return
        if self.chores is not None and self.chores.busy:
            if self.said != "homing":
                self.get_logger().error("rows not sent: the arm is homing")
                self.said = "homing"
            return
        names = tuple(msg.joint_names)
        if names not in (self.graph_arm, self.robot.arm_joints):
            self.get_logger().error(f"rows for joints {list(names)} not sent: expected {list(self.graph_arm)}")
            return
        if self.measured is None or not self.clock_offsets:
            if self.said != "no joint states":
                self.get_logger().error("rows not sent: no joint state from the arm yet")
                self.said = "no joint states"
            return
        rows = np.array([list(p.positions)[:7] for p in msg.points], float)
        now = self._now()
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        gated = self.gate.rows(now, stamp or now, rows, self.measured)
        if gated.broken:
            self._fault(gated.broken)  # never a command the arm would answer with a reflex
        if gated.late and self.episode:
            # The tested system's lateness, not the arm's fault: the episode goes on.
            self.get_logger().warning(f"{self.episode}: {gated.late}")
            # The row's own stamp and how long after it the row arrived: a late row, or one after a gap.
            event = {"episode_id": self.episode, "cause": gated.late, "t": now, "row_stamp": stamp,
                     "row_age_s": now - stamp}
            self.pub_late.publish(String(data=json.dumps(event)))
        if gated.resumed:
            self.get_logger().info("rows on time again: the arm follows them")
        command, stream = gated.command, self.gate.stream
        if command is None:
            return
        if stream.starts != self.offset_of_path:
            # A new path from rest: the estimate may move now. Never while the arm is commanded to
            # move, so a better estimate never shifts the motion under the controller.
            if stream.began_at_rest and not self.moving:
                self.robot_offset = max(self.clock_offsets)
            self.offset_of_path = stream.starts
            if stream.starts > 1:
                self.get_logger().warning(f"row stream started again (start {stream.starts}): a row came "
                                          "late or after a gap")
        traj = trajectory_message(command)
        robot_now = now + self.robot_offset
        traj.header.stamp.sec = int(robot_now)
        traj.header.stamp.nanosec = int(round((robot_now - int(robot_now)) * 1e9)) % 10**9
        self.pub_traj.publish(traj)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -- state and faults -------------------------------------------------------------------------------------
    def on_joint_states(self, msg: JointState) -> None:
        by_name = dict(zip(msg.name, msg.position))
        if all(j in by_name for j in self.robot.arm_joints):
            self.measured = np.array([by_name[j] for j in self.robot.arm_joints])
            speeds = dict(zip(msg.name, msg.velocity))
            self.moving = any(abs(speeds.get(j, 0.0)) > AT_REST_RAD_S for j in self.robot.arm_joints)
            self.watch.joint_state(time.monotonic())
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            if stamp > 0:
                self.clock_offsets.append(stamp - self._now())
        out = JointState(name=[self.graph_names.get(n, n) for n in msg.name], position=list(msg.position),
                         velocity=list(msg.velocity), effort=list(msg.effort))
        out.header = msg.header
        self.pub_joints.publish(out)

    def on_robot_state(self, msg) -> None:
        errors = tuple(name for name in msg.current_errors.get_fields_and_field_types()
                       if getattr(msg.current_errors, name))
        self.watch.robot_state(msg.robot_mode, errors)

    def ask_controllers(self) -> None:
        """controller_manager's listing, one query at a time. An unanswered query is given up
        after a while, not judged: a robot PC that stopped answering also stops the joint states."""
        now = time.monotonic()
        if self.listing is not None and not self.listing.done():
            if now - self.listed_at < CONTROLLER_QUERY_S:
                return
            self.list_controllers.remove_pending_request(self.listing)  # its late answer is dropped
        if not self.list_controllers.service_is_ready():
            return
        self.listed_at = now
        self.listing = self.list_controllers.call_async(self.ListControllers.Request())
        self.listing.add_done_callback(self.on_controllers)

    def on_controllers(self, future) -> None:
        if future.cancelled() or future.exception() is not None or future.result() is None:
            return
        states = {c.name: c.state for c in future.result().controller}
        self.watch.controllers(self.controller, states)

    def on_status(self, msg: String) -> None:
        try:
            data = json.loads(msg.data)
            episode, state = str(data["episode_id"]), str(data["state"])
        except (ValueError, KeyError, TypeError):
            return
        if state == "running" and episode != self.episode:
            # A new episode: its rows go out; a fault that is still there is its fault too.
            self.episode = episode
            self.fault = ""
            self.gate = CommandGate(self.robot, self.interval, self.latency, self.delivery)
            self.offset_of_path = -1
        elif state != "running" and episode == self.episode:
            self.episode = ""  # between episodes the operator may guide or stop the arm
            if self.chores is not None:
                self.chores.episode_ended(episode, time.monotonic())

    def on_operator_event(self, msg: String) -> None:
        try:
            data = json.loads(msg.data)
            if data.get("device", "hand") == "hand" and data["action"] == "release":
                self.chores.hand_released(str(data["episode_id"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            return

    def do_chores(self, fault: str) -> None:
        """The homing and retreat between episodes: the next message, and the verdicts said."""
        now = time.monotonic()
        measured_at = self.watch.last_joint_state or 0.0
        events, command = self.chores.tick(now, self.measured, measured_at, self.moving, fault)
        for episode, action, detail in events:
            said = f"arm {action} ({episode or 'session'}): {detail}"
            if detail.startswith("done"):
                self.get_logger().info(said)
            else:
                self.get_logger().error(said)
            self.pub_events.publish(String(data=json.dumps({"episode_id": episode, "device": "arm",
                                                            "action": action, "detail": detail})))
        if command is not None:
            move = self.chores.move
            self.get_logger().info(f"arm {move.action} ({move.episode_id or 'session'}): "
                                   f"{command.times[-1]:.2f} s to {np.round(move.goal, 4).tolist()}")
            self.pub_traj.publish(trajectory_message(command))  # a zero stamp: from receipt

    def check(self) -> None:
        cause = self.watch.fault(time.monotonic(), self.watch_robot_state)
        if self.chores is not None and not self.episode:
            self.do_chores(cause)
        if not cause or self.fault:
            return
        if not self.episode:
            if cause != self.said:
                self.get_logger().warning(f"arm not ready: {cause}")
                self.said = cause
            return
        self._fault(cause)

    def _fault(self, cause: str) -> None:
        """The episode's fault: its rows stop, the policy bridge pauses, the runner records it."""
        if self.fault or not self.episode:
            return
        self.fault = cause
        self.get_logger().error(f"hardware fault in {self.episode}: {cause}")
        self.pub_fault.publish(String(data=json.dumps({"episode_id": self.episode, "cause": cause,
                                                       "t": self.get_clock().now().nanoseconds * 1e-9})))
        if self.pause.service_is_ready():
            self.pause.call_async(SetPause.Request(episode_id=self.episode, pause=True,
                                                   reason=f"hardware_fault: {cause}"))


def main(args=None):
    raise SystemExit(run_node(FrankaArmBridge, args))


if __name__ == "__main__":
    main()
