"""franka_gripper_bridge: the graph's gripper command to a real Franka Hand.

Subscribes /panda_gripper/command (labference/GripperCommand, as the policy
bridge publishes it and lab_sim executes it in simulation) and sends each new
command as a goal of franka_gripper's actions: franka_msgs/action/Move for a
move to a width, franka_msgs/action/Grasp for a grasp with force and epsilons
(devices/franka_gripper.py decides which, and when a goal is due). A command
outside the hand's ranges is never sent. A goal the server refuses, or one that
could not be sent, is sent again with the next command; a goal that ran and
failed (a grasp that closed on nothing) is not repeated, since the policy
sees the open hand and decides.

Needs franka_msgs: a full ROS 2 install with franka_ros2, or the embedded
environment's copy (env/franka_msgs); without it the node exits at start with
one line saying so. Before the session it homes the hand (Homing, once the action
is there; `home_on_start`, true), and when /policy_bridge/status says an episode
ended it opens the hand (Move to `release_width`, the hand's maximum), so an object
still held is released. Each homing and release goes to /operator/events (JSON
`episode_id`, '' for the session, `action`, `detail`; latched), which the episode
runner writes to the operator.jsonl records. Parameters: robot_model (fr3; core.robots),
action_namespace (default the robot's: /fr3_gripper, where franka_ros2's gripper
node for arm_id fr3 serves grasp, move and homing), home_on_start, release_width.
"""
from __future__ import annotations

import json

from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String

from labference.msg import GripperCommand
from labference_ros.core.robots import robot_model
from labference_ros.devices.franka_gripper import GRASP, GoalSequencer, GripperCommandRejected, goal_for
from labference_ros.nodes.runtime import run_node


def _franka_homing():
    from franka_msgs.action import Homing

    return Homing


def _franka_actions():
    try:
        from franka_msgs.action import Grasp, Move
    except ImportError as exc:
        raise RuntimeError("franka_gripper_bridge needs franka_msgs (franka_ros2, or env/franka_msgs built by "
                           "env/bootstrap.sh), which this environment lacks") from exc
    return Grasp, Move


class FrankaGripperBridge(Node):
    def __init__(self):
        super().__init__("franka_gripper_bridge")
        self.Grasp, self.Move = _franka_actions()
        robot = robot_model(str(self.declare_parameter("robot_model", "fr3").value))
        namespace = str(self.declare_parameter("action_namespace", "").value) or robot.gripper_actions
        namespace = namespace.rstrip("/")
        self.action_names = {"grasp": f"{namespace}/grasp", "move": f"{namespace}/move"}
        self.grasp = ActionClient(self, self.Grasp, self.action_names["grasp"])
        self.move = ActionClient(self, self.Move, self.action_names["move"])
        self.sequencer = GoalSequencer()
        self.last_rejection = ""
        self.said_unavailable = False
        self.create_subscription(GripperCommand, "/panda_gripper/command", self.on_command, QoSProfile(depth=10))
        # Before the session the hand is homed (franka_gripper's Homing: it opens fully and learns
        # its width); at each episode's end it opens, so nothing the system held is carried over.
        self.Homing = _franka_homing()
        self.homing = ActionClient(self, self.Homing, f"{namespace}/homing")
        self.homed = not bool(self.declare_parameter("home_on_start", True).value)
        self.open_width = float(self.declare_parameter("release_width", robot.hand_max_width).value)
        self.released: set[str] = set()
        self.events = self.create_publisher(String, "/operator/events",
                                            QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.create_subscription(String, "/policy_bridge/status", self.on_status, QoSProfile(depth=10))
        self.create_timer(0.5, self.home)

    def home(self) -> None:
        if self.homed or not self.homing.server_is_ready():
            return
        self.homed = True
        self.get_logger().info("homing the hand before the session")
        self.homing.send_goal_async(self.Homing.Goal()).add_done_callback(
            lambda f: self._action_done(f, "", "homing"))

    def _action_done(self, future, episode: str, action: str) -> None:
        """Said on /operator/events once the hand's goal ran (or was refused)."""
        handle = future.result()
        if handle is None or not handle.accepted:
            return self.tell(episode, action, "refused by franka_gripper")
        handle.get_result_async().add_done_callback(
            lambda f: self.tell(episode, action, "done" if f.result().result.success
                                else f"failed: {f.result().result.error}"))

    def tell(self, episode: str, action: str, detail: str) -> None:
        self.events.publish(String(data=json.dumps({"episode_id": episode, "action": action, "detail": detail})))

    def on_status(self, msg: String) -> None:
        try:
            data = json.loads(msg.data)
            episode, state = str(data["episode_id"]), str(data["state"])
        except (ValueError, KeyError, TypeError):
            return
        if state == "running" or episode in self.released:
            return
        self.released.add(episode)
        if self.move.server_is_ready():
            self.get_logger().info(f"{episode} ended ({state}): opening the hand")
            self.sequencer.forget()
            self.move.send_goal_async(self.Move.Goal(width=self.open_width, speed=0.1)).add_done_callback(
                lambda f: self._action_done(f, episode, "release"))
        else:
            self.tell(episode, "release", f"{self.action_names['move']} not available: the hand was not opened")

    def on_command(self, msg: GripperCommand) -> None:
        try:
            goal = goal_for(msg.grasp, msg.width, msg.speed, msg.force, msg.epsilon_inner, msg.epsilon_outer)
        except GripperCommandRejected as exc:
            if str(exc) != self.last_rejection:
                self.get_logger().error(f"gripper command not sent: {exc}")
                self.last_rejection = str(exc)
            return
        self.last_rejection = ""
        goal = self.sequencer.next_goal(goal)
        if goal is None:
            return
        if goal.action == GRASP:
            request = self.Grasp.Goal(width=goal.width, speed=goal.speed, force=goal.force)
            request.epsilon.inner = goal.epsilon_inner
            request.epsilon.outer = goal.epsilon_outer
            client = self.grasp
        else:
            request = self.Move.Goal(width=goal.width, speed=goal.speed)
            client = self.move
        if not client.server_is_ready():
            if not self.said_unavailable:
                self.get_logger().error(f"{self.action_names[goal.action]} is not available; gripper goals "
                                        "are not sent until it is")
                self.said_unavailable = True
            self.sequencer.forget()
            return
        self.said_unavailable = False
        client.send_goal_async(request).add_done_callback(lambda f, g=goal: self._accepted(f, g))

    def _accepted(self, future, goal) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            self.get_logger().error(f"gripper goal {goal} refused by franka_gripper")
            if self.sequencer.last == goal:
                self.sequencer.forget()
            return
        handle.get_result_async().add_done_callback(lambda f, g=goal: self._finished(f, g))

    def _finished(self, future, goal) -> None:
        result = future.result().result
        if not result.success:
            # A grasp that closed on nothing fails here; the referee sees it in the estimator's grasp state.
            self.get_logger().warning(f"gripper goal {goal} failed: {result.error}")


def main(args=None):
    raise SystemExit(run_node(FrankaGripperBridge, args))


if __name__ == "__main__":
    main()
