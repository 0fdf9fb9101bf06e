"""franka_standin: franka_ros2's robot PC for tests, with its interfaces, names,
message types and rates, the arm played by devices/franka_arm.ArmStandIn.

- `/joint_states` (sensor_msgs/JointState) at `joint_state_rate_hz` (30, the rate of
  franka_bringup's joint_state_publisher): `<arm>_joint1..7` and the two finger joints;
- `/<controller>/joint_trajectory` (trajectory_msgs/JointTrajectory; controller
  `joint_trajectory_controller` as in franka_bringup's controllers.yaml): interpolated
  and checked at 1 kHz as the arm does; a command whose velocity or acceleration jumps
  beyond the robot's limits, or leaves its range or velocity bounds, raises a reflex;
- `/franka_robot_state_broadcaster/robot_state` (franka_msgs/FrankaRobotState) at the
  joint-state rate: `robot_mode`, `current_errors` and `last_motion_errors`, the
  measured and desired joint states;
- the hand at `/<arm>_gripper/{move,grasp,homing}` (franka_msgs actions) and
  `/<arm>_gripper/joint_states`; a grasp closes to its width and succeeds
  (`grasp_succeeds`, true), a move goes to its width, homing opens the hand (each at
  once: the fingers do not travel here);
- `/controller_manager/list_controllers` (controller_manager_msgs/ListControllers): the
  trajectory controller (effort interfaces, as config/franka_controllers.yaml claims
  them), the joint state and robot state broadcasters, each active;
- failing on request, `~/inject` (std_msgs/String): `reflex` (a joint reflex, as a
  collision raises), `stall` (the joint states stop), `resume` (they go on),
  `recover` (franka_ros2's error recovery: the error is cleared), `deactivate` (the
  trajectory controller inactive: trajectories are ignored), `activate` (active
  again); or on a schedule, `fault_episodes` ("0:reflex,2:stall,3:deactivate": one
  second into those episodes, as /policy_bridge/status announces them; when such an
  episode ends the arm is recovered, the controller activated and the joint states
  resume, as an operator would do).

Its clock is the robot PC's: this computer's plus `clock_offset_s` (0), in every
stamp it publishes and for every trajectory stamp it receives (a zero stamp starts
on receipt). Parameters: robot_model (fr3), controller, joint_state_rate_hz,
start (7 joint positions; the cell's home by default), start_width (the fingers'
opening, 0.08), grasp_succeeds, clock_offset_s.
"""
from __future__ import annotations

import json

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.action import ActionServer
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from labference_ros.cell.description import common_cell
from labference_ros.core.robots import robot_model
from labference_ros.devices.franka_arm import JOINT_REFLEX, ArmStandIn
from labference_ros.nodes.runtime import run_node

STEP_HZ = 100.0  # the 1 kHz cycles run in batches of ten


class FrankaStandIn(Node):
    def __init__(self, **node_options):
        super().__init__("franka_standin", **node_options)
        from franka_msgs.action import Grasp, Homing, Move
        from franka_msgs.msg import FrankaRobotState

        self.FrankaRobotState = FrankaRobotState
        self.Grasp, self.Homing, self.Move = Grasp, Homing, Move
        v = {name: self.declare_parameter(name, default).value for name, default in (
            ("robot_model", "fr3"), ("controller", ""), ("joint_state_rate_hz", 30.0),
            ("start", list(common_cell().robot.home)), ("grasp_succeeds", True), ("clock_offset_s", 0.0),
            ("start_width", 0.08), ("fault_episodes", ""))}
        self.robot = robot_model(str(v["robot_model"]))
        controller = str(v["controller"]) or self.robot.trajectory_controller
        # The robot PC's clock: this one's plus clock_offset_s (two PCs never agree exactly).
        self.clock_offset = float(v["clock_offset_s"])
        self.arm = ArmStandIn(self.robot, np.asarray(v["start"], float), time=self.now())
        self.width = float(v["start_width"])
        self.grasp_succeeds = bool(v["grasp_succeeds"])
        self.stalled = False
        self.controller = controller
        self.controller_active = True
        self.rejected_names: tuple[str, ...] | None = None
        qos = QoSProfile(depth=10)
        self.pub_joints = self.create_publisher(JointState, "/joint_states", qos)
        self.pub_hand = self.create_publisher(JointState, f"{self.robot.gripper_actions}/joint_states", qos)
        self.pub_state = self.create_publisher(FrankaRobotState, "/franka_robot_state_broadcaster/robot_state", qos)
        self.create_subscription(JointTrajectory, f"/{controller}/joint_trajectory", self.on_trajectory, qos)
        self.create_subscription(String, "~/inject", self.on_inject, qos)
        # Scheduled faults: "INDEX:FAULT,..." (reflex, stall or deactivate) one second into that episode
        # (its id begins with the index, as the episode runner numbers them); its end recovers the arm.
        self.schedule = {int(i): f.strip() for i, f in (item.split(":") for item in
                                                          str(v["fault_episodes"]).split(",") if item.strip())}
        self.episodes_seen: set[str] = set()
        self.faulted: set[str] = set()
        if self.schedule:
            self.create_subscription(String, "/policy_bridge/status", self.on_status, qos)
        hand = self.robot.gripper_actions
        self.actions = [ActionServer(self, Move, f"{hand}/move", self.on_move),
                        ActionServer(self, Grasp, f"{hand}/grasp", self.on_grasp),
                        ActionServer(self, Homing, f"{hand}/homing", self.on_homing)]
        from controller_manager_msgs.srv import ListControllers

        self.create_service(ListControllers, "/controller_manager/list_controllers", self.on_list_controllers)
        self.create_timer(1.0 / STEP_HZ, self.step)
        self.create_timer(1.0 / float(v["joint_state_rate_hz"]), self.publish)

    def now(self) -> float:
        """Robot time, seconds."""
        return self.get_clock().now().nanoseconds * 1e-9 + self.clock_offset

    def stamp(self):
        ns = int(round(self.now() * 1e9))
        return Time(sec=ns // 10**9, nanosec=ns % 10**9)

    def on_trajectory(self, msg: JointTrajectory) -> None:
        if tuple(msg.joint_names) != self.robot.arm_joints:
            if tuple(msg.joint_names) != self.rejected_names:
                self.get_logger().error(f"trajectory for joints {list(msg.joint_names)} refused: the arm's joints "
                                        f"are {list(self.robot.arm_joints)}")
                self.rejected_names = tuple(msg.joint_names)
            return
        if not msg.points:
            return
        if not self.controller_active:
            return  # an inactive controller takes no commands
        self._advance()
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        times = np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in msg.points])
        positions = np.array([list(p.positions) for p in msg.points])
        velocities = accelerations = None
        if all(len(p.velocities) == 7 for p in msg.points):
            velocities = np.array([list(p.velocities) for p in msg.points])
            if all(len(p.accelerations) == 7 for p in msg.points):
                accelerations = np.array([list(p.accelerations) for p in msg.points])
        # A zero stamp starts on receipt; any other counts the points from it, by the robot's clock.
        self.arm.command(times, positions, velocities, accelerations, start=stamp if stamp > 0 else None)

    def on_inject(self, msg: String) -> None:
        what = msg.data.strip()
        self.get_logger().warning(f"fault injected: {what}")
        if what == "reflex":
            self.arm.advance(self.now())
            self.arm.reflex(JOINT_REFLEX, "injected")
        elif what == "stall":
            self.stalled = True
        elif what == "resume":
            self.stalled = False
        elif what == "recover":
            self.arm.recover()
        elif what in ("deactivate", "activate"):
            self.controller_active = what == "activate"

    def on_list_controllers(self, request, response):
        from controller_manager_msgs.msg import ControllerState

        joints = self.robot.arm_joints
        trajectory = ControllerState(
            name=self.controller, state="active" if self.controller_active else "inactive",
            type="joint_trajectory_controller/JointTrajectoryController", update_rate=1000,
            claimed_interfaces=[f"{j}/effort" for j in joints] if self.controller_active else [],
            required_command_interfaces=[f"{j}/effort" for j in joints],
            required_state_interfaces=[f"{j}/{i}" for j in joints for i in ("position", "velocity")])
        broadcasters = [ControllerState(name=name, state="active", type=kind, update_rate=1000)
                        for name, kind in (("joint_state_broadcaster", "joint_state_broadcaster/JointStateBroadcaster"),
                                           ("franka_robot_state_broadcaster",
                                            "franka_robot_state_broadcaster/FrankaRobotStateBroadcaster"))]
        response.controller = [trajectory, *broadcasters]
        return response

    def on_status(self, msg: String) -> None:
        data = json.loads(msg.data)
        episode = str(data.get("episode_id", ""))
        if data.get("state") != "running":
            if episode in self.faulted:  # the episode is over: the operator recovers the arm
                self.faulted.discard(episode)
                for repair in ("recover", "activate", "resume"):
                    self.on_inject(String(data=repair))
            return
        if episode in self.episodes_seen:
            return
        self.episodes_seen.add(episode)
        index = int(episode.split("_", 1)[0]) if episode.split("_", 1)[0].isdigit() else -1
        fault = self.schedule.get(index)
        if fault is None:
            return
        self.faulted.add(episode)
        timer = None

        def inject():
            timer.cancel()
            self.on_inject(String(data=fault))

        timer = self.create_timer(1.0, inject)

    def step(self) -> None:
        self._advance()

    def _advance(self) -> None:
        error = self.arm.error
        self.arm.advance(self.now())
        if self.arm.error and not error:
            self.get_logger().error(f"reflex: {self.arm.error}: {self.arm.error_detail}")

    def publish(self) -> None:
        if self.stalled:
            return
        stamp = self.stamp()
        half = self.width / 2
        names = list(self.robot.arm_joints) + list(self.robot.finger_joints)
        joints = JointState(name=names, position=[float(x) for x in self.arm.q] + [half, half],
                            velocity=[float(x) for x in self.arm.dq] + [0.0, 0.0])
        joints.header.stamp = stamp
        self.pub_joints.publish(joints)
        hand = JointState(name=list(self.robot.finger_joints), position=[half, half])
        hand.header.stamp = stamp
        self.pub_hand.publish(hand)
        state = self.FrankaRobotState(robot_mode=self.arm.robot_mode)
        state.header.stamp = stamp
        state.measured_joint_state = JointState(name=list(self.robot.arm_joints),
                                                position=[float(x) for x in self.arm.q],
                                                velocity=[float(x) for x in self.arm.dq])
        state.desired_joint_state = state.measured_joint_state
        if self.arm.error:
            setattr(state.current_errors, self.arm.error, True)
            setattr(state.last_motion_errors, self.arm.error, True)
        self.pub_state.publish(state)

    def _hand_to(self, width: float, speed: float) -> None:
        # The fingers are at the goal's width when it succeeds (callbacks run one at a time:
        # waiting for them to travel would stall the joint states).
        self.width = float(width)

    def on_move(self, handle):
        goal = handle.request
        ok = 0.0 <= goal.width <= self.robot.hand_max_width and goal.speed > 0
        if ok:
            self._hand_to(goal.width, goal.speed)
        handle.succeed()
        return self.Move.Result(success=ok, error="" if ok else "width or speed out of range")

    def on_grasp(self, handle):
        goal = handle.request
        self._hand_to(goal.width, goal.speed)
        handle.succeed()
        ok = self.grasp_succeeds
        return self.Grasp.Result(success=ok, error="" if ok else "no object grasped")

    def on_homing(self, handle):
        self._hand_to(self.robot.hand_max_width, 0.1)
        handle.succeed()
        return self.Homing.Result(success=True, error="")


def main(args=None):
    raise SystemExit(run_node(FrankaStandIn, args))


if __name__ == "__main__":
    main()
