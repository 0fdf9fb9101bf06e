"""world_estimator: the referee's world measurements from what a real cell senses.

A real rig has no /evaluator/world_state from a simulator. This node builds it
(the task family's sensor estimator does the estimating) from:
  /markers/poses      labference/MarkerDetections: object poses from fiducial markers
  /joint_states       the arm (fingertip centre by forward kinematics) and the finger joints
  /panda_gripper/command  whether the last gripper command closes or grasps
  /balance/reading    the balance (balance_sics on a real rig)
and publishes, for every balance reading, one frame stamped with that
reading's time, with the arm state and the markers of that time (and, while the
balance is silent for longer than
`reading_timeout_s`, one frame every `reading_timeout_s` whose reading is
invalid and says so, so that the referee records it). Joint states and markers are
taken when a frame needs them and paired with it by stamp (the samples nearest the
reading's, core/stamped_series.py): a node that falls behind still joins each reading
with the arm of its own time, not with the last sample it happened to process.
  /evaluator/world_state          the estimated objects, contacts and gripper state
  /evaluator/balance_reading      the reading as the estimator checked it (invalid, with the
                                  reason, when the markers and the reading disagree)
The real graph remaps the referee's /balance/reading to /evaluator/balance_reading.

Scene check (the operator's set-up between episodes): /world_estimator/reset
(labference/ResetEpisode) loads the instance and answers success only when the
sensed scene matches its initial state: every object's marker seen within
`setup_tolerance_m` of where the instance puts it, nothing held, and a stable,
valid reading. With `balance_marker` the balance's pose is sensed too: the marker
named "balance" must be seen, its pan centre within `balance_tolerance_m` (1 cm) of
the instance's, and the episode is then estimated with the sensed pose. Otherwise it
answers success=false with what differs, and the episode runner (setup_retry_s) asks
again until the operator has set it up.
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import Pose
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState

from labference.msg import BalanceReading, GripperCommand, MarkerDetections, ObjectState, WorldState
from labference.srv import ResetEpisode
from labference_ros.cell.description import LABEL_LIFT_M
from labference_ros.core.geometry import BALANCE_MARKER, balance_mismatch, sensed_balance_xy, slide_to_height
from labference_ros.core.measurements import LEFT_FINGER, BalanceMeasurement, SensorFrame
from labference_ros.core.robots import robot_model
from labference_ros.core.stamped_series import StampedSeries
from labference_ros.msgconv import balance_from_msg, fill_balance_msg, fill_world_msg, stamp_to_s
from labference_ros.nodes.matching import measurement_qos
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
from labference_ros.skills.kinematics import FingertipKinematics
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family

READING_MAX_AGE_S = 1.0  # a reading older than this at the scene check: the balance is silent
SILENT_SOURCE = "world_estimator"
REOPENED_M = 0.01  # fingers this much wider than their narrowest since a close command: opened again
# Samples kept for pairing by stamp, and the readers' depth: several seconds of a 30-50 Hz
# arm (lab_sim, franka_ros2's broadcaster) and a 10 Hz tracker, more than a starved
# process falls behind before it takes them. Pairing by stamp needs the robot PC's and
# this PC's clocks to agree (docs/real-rig.md, step 2).
PAIRING_SPAN_S = 4.0
JOINT_STATE_DEPTH = 250
MARKER_DEPTH = 50


def _pose_tuple(pose: Pose):
    p, q = pose.position, pose.orientation
    return (p.x, p.y, p.z), (q.w, q.x, q.y, q.z)


class WorldEstimatorNode(Node):
    def __init__(self):
        super().__init__("world_estimator")
        self.family = task_family(str(self.declare_parameter("task", DEFAULT_FAMILY).value))
        self.setup_tolerance_m = float(self.declare_parameter("setup_tolerance_m", 0.02).value)
        self.reading_timeout_s = float(self.declare_parameter("reading_timeout_s", 0.5).value)
        if not self.reading_timeout_s > 0:
            raise ValueError(f"reading_timeout_s must be positive, got {self.reading_timeout_s}")
        # The camera the markers are tracked on: its centre is the viewing rays' origin, which puts a
        # resting object on its surface (core.geometry.slide_to_height). "" = poses taken as measured.
        camera = str(self.declare_parameter("marker_camera", "").value)
        self.cell = self.family.cell_description()
        cameras = self.cell.cameras
        if camera and (camera not in cameras or cameras[camera].parent != "world"):
            fixed = ", ".join(n for n, c in cameras.items() if c.parent == "world")
            raise ValueError(f"marker_camera must be a world-fixed camera of the cell ({fixed}), got {camera!r}")
        self.viewpoint = tuple(float(v) for v in cameras[camera].position) if camera else None
        self.balance_marker = bool(self.declare_parameter("balance_marker", False).value)
        self.balance_tolerance_m = float(self.declare_parameter("balance_tolerance_m", 0.01).value)
        if self.balance_marker and self.cell.balance is None:
            raise ValueError("balance_marker: this task's cell has no balance")
        default_timeout = self.family.estimator_parameters().marker_timeout_s
        timeout = float(self.declare_parameter("marker_timeout_s", default_timeout).value)
        if not timeout > 0:
            raise ValueError(f"marker_timeout_s must be positive, got {timeout}")
        self.estimator_params = self.family.estimator_parameters(marker_timeout_s=timeout)
        # Whose joint names /joint_states carries: the simulated Panda's, or a rig's (fr3 under
        # franka_ros2). The FR3 has the Panda's kinematic parameters: the same forward kinematics.
        robot = robot_model(str(self.declare_parameter("robot_model", "panda").value))
        self.arm_joints, self.finger_joints = robot.arm_joints, robot.finger_joints
        self.kinematics = FingertipKinematics()
        self.estimator = None  # the family's sensor estimator of the current episode
        self.markers: dict[str, tuple] = {}  # the newest marker frame (the scene check's)
        self.markers_t = -math.inf
        self.marker_frames: StampedSeries[dict] = StampedSeries(PAIRING_SPAN_S)
        self.arm: tuple[float, ...] | None = None  # the newest arm state
        self.arm_states: StampedSeries[tuple] = StampedSeries(PAIRING_SPAN_S)
        self.gripper_width = 0.0
        self.widths: StampedSeries[float] = StampedSeries(PAIRING_SPAN_S)
        self.gripper_closing = False
        self.narrowest = 0.0  # the fingers' narrowest width since the last gripper command
        self.frames, self.estimate_s = 0, 0.0  # what estimating costs (said when the node stops)
        self.last_world = None
        self.last_reading = None
        self.last_reading_t = -math.inf
        self.pub_world = self.create_publisher(WorldState, "/evaluator/world_state", measurement_qos(200))
        self.pub_reading = self.create_publisher(BalanceReading, "/evaluator/balance_reading", measurement_qos(200))
        # Taken when a frame, a command or the scene check needs them (nodes/sampled.py).
        self.input_reader = reader_node(self)
        self.joint_input = SampledInput(self.input_reader, JointState, "/joint_states",
                                        QoSProfile(depth=JOINT_STATE_DEPTH), raw=False)
        self.marker_input = SampledInput(self.input_reader, MarkerDetections, "/markers/poses",
                                         QoSProfile(depth=MARKER_DEPTH), raw=False)
        self.create_subscription(GripperCommand, "/panda_gripper/command", self.on_gripper, QoSProfile(depth=50))
        self.create_subscription(BalanceReading, "/balance/reading", self.on_reading, measurement_qos(200))
        self.create_service(ResetEpisode, "/world_estimator/reset", self.on_reset)
        self.create_timer(self.reading_timeout_s / 5, self.check_silence)

    # inputs -------------------------------------------------------------------
    def take_inputs(self) -> None:
        """Everything the arm and the tracker sent since the last call, in arrival order."""
        for msg in self.marker_input.take_all():
            self.on_markers(msg)
        for msg in self.joint_input.take_all():
            self.on_joints(msg)

    def on_markers(self, msg: MarkerDetections) -> None:
        if len(msg.names) != len(msg.poses):
            self.get_logger().error(f"/markers/poses: {len(msg.names)} names but {len(msg.poses)} poses; dropped")
            return
        self.markers = {name: _pose_tuple(pose) for name, pose in zip(msg.names, msg.poses)}
        self.markers_t = stamp_to_s(msg.header.stamp)
        self.marker_frames.add(self.markers_t, self.markers)

    def on_joints(self, msg: JointState) -> None:
        t = stamp_to_s(msg.header.stamp)
        by_name = dict(zip(msg.name, msg.position))
        if all(j in by_name for j in self.arm_joints):
            self.arm = tuple(float(by_name[j]) for j in self.arm_joints)
            self.arm_states.add(t, self.arm)
        if all(j in by_name for j in self.finger_joints):
            self.gripper_width = float(sum(by_name[j] for j in self.finger_joints))
            self.widths.add(t, self.gripper_width)
            self.narrowest = min(self.narrowest, self.gripper_width)
            if self.gripper_closing and self.gripper_width > self.narrowest + REOPENED_M:
                self.gripper_closing = False  # opened since it was told to close (a reset, an operator)

    def on_gripper(self, msg: GripperCommand) -> None:
        self.take_inputs()  # the fingers as they were when the command came
        self.gripper_closing = bool(msg.grasp) or msg.width < self.gripper_width - 1e-4
        self.narrowest = self.gripper_width

    def on_reading(self, msg: BalanceReading) -> None:
        self.take_inputs()
        t = stamp_to_s(msg.header.stamp)
        reading = balance_from_msg(msg)
        self.last_reading, self.last_reading_t = reading, t
        self._publish_frame(t, reading, msg.source)

    def check_silence(self) -> None:
        """A balance that stopped answering (a dead node, a pulled cable) is a measured fact too."""
        self.take_inputs()  # also between episodes: the readers' queues never fill
        if self.estimator is None:
            return
        now = self.get_clock().now().nanoseconds * 1e-9
        last_frame_t = self.estimator.last_t if self.estimator.last_t is not None else -math.inf
        quiet = now - max(self.last_reading_t, last_frame_t)
        if quiet >= self.reading_timeout_s:
            silent = BalanceMeasurement(raw_g=0.0, filtered_g=0.0, displayed_g=0.0, stable=False, valid=False,
                                        invalid_reason=f"{SILENT_SOURCE}: no balance reading for over "
                                                       f"{self.reading_timeout_s:g} s")
            self._publish_frame(now, silent, SILENT_SOURCE)

    def _publish_frame(self, t: float, reading: BalanceMeasurement, source: str) -> None:
        if self.estimator is None or self.arm is None:
            return  # no episode's instance yet, or no arm state: nothing to estimate from
        if self.estimator.last_t is not None and t < self.estimator.last_t:
            if self.get_parameter("use_sim_time").value and t < self.estimator.last_t - 1.0:
                # The simulator was reset (a rehearsal): that episode is over; the next scene check starts one.
                self.get_logger().info(f"sim time went back from {self.estimator.last_t:.3f} to {t:.3f} s: "
                                       "episode estimate closed")
                self.estimator = None
                self.last_world = None  # what it held belonged to that episode
                return
            self.get_logger().warning(f"balance reading at {t:.3f} s is older than the last frame; dropped")
            return
        # The samples nearest the reading's time; a marker frame older than the estimator's
        # timeout counts as nothing seen.
        _arm_t, arm = self.arm_states.nearest(t)
        width = self.widths.nearest(t)
        markers = self.marker_frames.nearest(t, not_before=t - self.estimator.params.marker_timeout_s)
        frame = SensorFrame(t=t, markers=dict(markers[1]) if markers is not None else {},
                            fingertip=self.kinematics.centre(arm),
                            gripper_width=width[1] if width is not None else self.gripper_width,
                            gripper_closing=self.gripper_closing,
                            balance=reading, viewpoint=self.viewpoint)
        started = time.perf_counter()
        world = self.estimator.estimate(frame)
        self.estimate_s += time.perf_counter() - started
        self.frames += 1
        self.last_world = world
        self.pub_world.publish(fill_world_msg(WorldState(), world, ObjectState, self.family.support_labels(world)))
        self.pub_reading.publish(fill_balance_msg(BalanceReading(), world.balance, t, source))

    # the operator's set-up ----------------------------------------------------
    def on_reset(self, request, response):
        self.take_inputs()
        try:
            instance = self.family.instance_from_json(request.instance_json)
            estimator = self.family.sensor_estimator(instance, self.estimator_params)
        except (ValueError, KeyError, TypeError) as exc:
            response.success, response.message = False, f"unreadable instance: {exc}"
            return response
        problems = self.scene_differences(estimator.initial_positions)
        if self.balance_marker and getattr(estimator, "balance_xy", None) is not None:
            seen = self.markers.get(BALANCE_MARKER)
            if seen is None:
                problems.append(f"balance: marker not seen (the marker named {BALANCE_MARKER!r} in markers)")
            else:
                sensed = sensed_balance_xy(seen[0], self.cell.balance.pan_top_z, self.viewpoint)
                mismatch = balance_mismatch(sensed, estimator.balance_xy, self.balance_tolerance_m)
                if mismatch:
                    problems.append(mismatch)
                estimator.balance_xy = sensed  # the episode is estimated with the balance where it stands
        response.layout_hash = instance.layout_hash
        response.sim_time = self.get_clock().now().nanoseconds * 1e-9
        if problems:
            response.success = False
            response.message = "scene does not match the instance's start: " + "; ".join(problems)
            return response
        self.estimator = estimator  # tracks start at the instance's places, confirmed by the markers
        response.success, response.message = True, "scene matches the instance's start"
        return response

    def _distance_to_place(self, name: str, seen, place) -> float:
        """How far the seen object is from its place; seen by one camera, along its viewing ray."""
        if self.viewpoint is None:
            return math.dist(seen, place)
        above = self.cell.objects[name].height / 2 + LABEL_LIFT_M
        return math.dist(slide_to_height(seen, self.viewpoint, place[2], above), place)

    def scene_differences(self, start: dict[str, tuple]) -> list[str]:
        """What the operator still has to set up (empty: the scene is ready)."""
        out = []
        now = self.get_clock().now().nanoseconds * 1e-9
        if now - self.markers_t > 1.0:
            out.append("no marker frame in the last second (is fiducial_tracker running?)")
        for name, place in sorted(start.items()):
            seen = self.markers.get(name)
            if seen is None:
                out.append(f"{name}: marker not seen")
            elif self._distance_to_place(name, seen[0], place) > self.setup_tolerance_m:
                out.append(f"{name}: at ({seen[0][0]:.3f}, {seen[0][1]:.3f}, {seen[0][2]:.3f}), the instance puts "
                           f"it at ({place[0]:.3f}, {place[1]:.3f}, {place[2]:.3f})")
        if self.arm is None:
            out.append("no arm joint states")
        if self.gripper_closing or (self.last_world is not None and any(
                LEFT_FINGER in o.contacts for o in self.last_world.objects.values())):
            out.append("the gripper is closed or holds an object (open it)")
        r = self.last_reading
        if r is None or now - self.last_reading_t > READING_MAX_AGE_S:
            out.append(f"no balance reading in the last {READING_MAX_AGE_S:g} s")
        elif not r.valid or r.overload:
            out.append(f"balance reading not valid: {r.invalid_reason or 'overload'}")
        elif not r.stable:
            out.append("balance reading not stable")
        return out

    def destroy_node(self):
        destroy_reader(self, "input_reader")
        super().destroy_node()

    def close(self):
        if self.frames:
            self.get_logger().info(f"estimated {self.frames} frames, {1e6 * self.estimate_s / self.frames:.0f} us "
                                   "per frame")


def main(args=None):
    raise SystemExit(run_node(WorldEstimatorNode, args))


if __name__ == "__main__":
    main()
