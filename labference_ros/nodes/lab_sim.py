"""lab_sim: the step owner. Publishes clock, joints, cameras, the load-cell wrench
(where the task's scene has a balance) and evaluator world state; applies
JointTrajectory (JTC replace semantics) and gripper commands; serves reset,
checkpoints and sync-mode advance. The task family (`task`) builds the scene.

Sync mode lets a caller keep one advance ahead: an advance asked while another
runs waits for it (a third is refused; with LABFERENCE_EXECUTOR=single the advance
service's callback group keeps it in the middleware until the first ends), and a
command stamped later than the current sim time waits until sim time reaches its
stamp, so it acts at its boundary exactly as if it had arrived there. The policy
bridge so sends several rows, one command each, for one advance that names their
boundaries, and the next advance's rows while one runs. An advance whose
command_stamp is ahead of sim time when its turn comes (asked before a reset, or
after an advance that failed) is refused. An advance's answer carries the last
measurement published (joint state and world state), so the caller needs no
subscription to read the state at its boundaries."""
from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import time
import uuid
from collections import deque

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped, WrenchStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.task import Future
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage
from trajectory_msgs.msg import JointTrajectory

from labference.msg import BalanceReading, GripperCommand, ObjectState, WorldState
from labference.srv import Advance, ResetEpisode, RestoreCheckpoint, SaveCheckpoint
from labference_ros.cdr_views import WorldStateEncoder
from labference_ros.msgconv import fill_world_msg, image_data, s_to_stamp, stamp_parts, stamp_to_s
from labference_ros.nodes.advance_protocol import ADVANCE_RUNNING, RESET_DURING_ADVANCE
from labference_ros.nodes.matching import await_matched, command_qos, measurement_qos
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
from labference_ros.nodes.sim_interfaces import SimulationInterfaces
from labference_ros.sim.frames import camera_frame_id
from labference_ros.sim.command_validation import check_ordered_arm_targets
from labference_ros.sim.trajectory import TrajectoryFollower, pack_checkpoint, unpack_checkpoint
from labference_ros.tasks import family as task_family

# The balance display shows the newest reading stamped at least DISPLAY_LAG_S before
# a frame (a display's latency: two measurement periods at the default rate). The
# balance node answers every wrench with a reading of the wrench's stamp; in sync mode
# lab_sim waits for the reading of the last wrench so stamped before it renders, so
# that the same seeds give the same frames in every run, whenever the balance node's
# answer comes. In realtime mode a frame shows the newest such reading that has arrived.
DISPLAY_LAG_S = 0.02
# A balance that answers none within this (gone, or one that is polled on its own
# clock): the frame shows what has arrived, and lab_sim stops waiting until the next
# reset or restore.
DISPLAY_WAIT_S = 5.0
# A frame whose reading has not arrived looks again this often (sim time stands still).
READING_POLL_S = 0.001
# An advance whose control boundary's commands have not come within this is refused
# (parameter command_wait_s).
COMMAND_WAIT_S = 10.0
# A command stamped within this of the current sim time is for now (rounding of stamps).
STAMP_EPS_S = 1e-9
STAMP_TOLERANCE_NS = 1
# Boundaries whose commands lab_sim remembers, per kind: at least the rows of the advance
# that runs and of the one asked ahead (the policy bridge's rows_per_advance, twice).
COMMANDS_KEPT = 128


class LabSim(Node):
    def __init__(self, **node_options):
        # node_options: rclpy Node keywords, e.g. a composed process's own arguments per node.
        super().__init__("lab_sim", **node_options)
        p = self.declare_parameters("", [
            ("step_mode", "sync"), ("camera_rate", 10.0), ("measurement_rate", 100.0),
            ("image_width", 128), ("image_height", 128), ("controller", "panda_arm_controller"),
            ("checkpoint_dir", "/tmp/labference_checkpoints"), ("realtime_factor", 1.0),
            ("match_timeout_s", 5.0), ("fiducials", False), ("marker_camera_width", 1280),
            ("marker_camera_height", 960), ("task", "feedback_weighing"),
            ("command_wait_s", COMMAND_WAIT_S), ("sim_interfaces_ns", "")])
        v = {x.name: x.value for x in p}
        from labference_ros.sim.mujoco_backend import MARKER_CAMERA, MujocoBackend, RenderSettings

        # fiducials: the rehearsal's scene, markers on the objects and the overhead camera
        # that tracks them (its own, larger image size: a marker is 15-30 mm across).
        marker_size = (int(v["marker_camera_height"]), int(v["marker_camera_width"]))
        render = RenderSettings(width=int(v["image_width"]), height=int(v["image_height"]),
                                fiducials=bool(v["fiducials"]), sizes={MARKER_CAMERA: marker_size})
        self.family = task_family(str(v["task"]))
        self.backend = MujocoBackend(render, self.family.name)
        self.cameras = self.backend.cameras
        self.step_mode = v["step_mode"]
        if self.step_mode not in ("sync", "realtime"):
            raise ValueError(f"step_mode must be sync or realtime, got {self.step_mode!r}")
        self.camera_period = 1.0 / float(v["camera_rate"])
        self.measure_period = 1.0 / float(v["measurement_rate"])
        self.checkpoint_dir = pathlib.Path(v["checkpoint_dir"])
        self.realtime_factor = float(v["realtime_factor"])
        self.command_wait_s = float(v["command_wait_s"])
        self.follower = TrajectoryFollower()
        self.loaded = False
        self.next_measure = self.next_camera = 0.0
        # The boundaries (stamps, ns) whose arm and gripper commands arrived in this timeline:
        # an advance that names its boundary waits until that boundary's commands are here.
        self.arm_stamps = CommandedBoundaries(COMMANDS_KEPT)
        self.gripper_stamps = CommandedBoundaries(COMMANDS_KEPT)
        self.checkpoints: dict[str, bytes] = {}
        # (rclpy Future, predicate) while an advance waits for commands; the future's result
        # is why the wait ended: "arrived", "timeout" or "reset".
        self.command_waiter = None
        self.environment = None  # the family's environment behaviour this episode (TaskFamily.make_environment)
        # The display's inputs since the last reset or restore (one timeline of sim
        # time), stamps in nanoseconds: the wrenches published, each owed a reading,
        # and the readings received, stamp -> (shown grams, stable).
        self.timeline = 0
        self.timeline_start_ns = 0
        self.wrench_stamps: deque[int] = deque(maxlen=1000)
        # Wall time (ns) each wrench of this timeline went out, by stamp: a reading of that
        # stamp published before then answers an earlier timeline's wrench (after a restore).
        self.wrench_sent_ns: dict[int, int] = {}
        self.readings: dict[int, tuple[float, bool]] = {}
        self.display_waits = True  # False after a wait timed out in this timeline
        # This timeline's last measurement, as published: an advance's answer carries it.
        self.last_joints: JointState | None = None
        self.last_world = b""
        self.advancing = False
        # Sync mode: an advance's measurements, held until a frame is due or the advance
        # ends and then written a topic at a time (publisher -> messages, in order), so that
        # a reader can take several in one wake-up.
        self.holding = False
        self.held: dict[object, list] = {}
        # Sync mode: the arm and gripper commands stamped after the current sim time, in stamp
        # order, each applied when sim time reaches its stamp.
        self.held_arm: deque[JointTrajectory] = deque()
        self.held_gripper: deque[GripperCommand] = deque()
        # Ends when the advance being served does; an advance asked meanwhile waits on it.
        self.advance_done: Future | None = None
        self.advance_waiting = False

        qos = QoSProfile(depth=10)
        img_qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
        self.pub_clock = self.create_publisher(Clock, "/clock", qos)
        self.pub_joints = self.create_publisher(JointState, "/joint_states", qos)
        self.pub_wrench = self.create_publisher(WrenchStamped, "/balance/wrench", measurement_qos(200))
        self.pub_tare = self.create_publisher(
            WrenchStamped, "/balance/tare", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.pub_world = self.create_publisher(WorldState, "/evaluator/world_state", measurement_qos(200))
        # Serialized by rclpy once per shape of world state, then packed (cdr_views).
        self.world_encoder = WorldStateEncoder(
            lambda m, supports: serialize_message(fill_world_msg(WorldState(), m, ObjectState, supports)))
        # Fixtures at this layout's poses and the cameras' optical frames (sim/frames.py).
        self.pub_tf_static = self.create_publisher(
            TFMessage, "/tf_static", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.pub_images = {c: self.create_publisher(Image, f"/cameras/{c}/image_raw", img_qos) for c in self.cameras}
        self.pub_info = {c: self.create_publisher(CameraInfo, f"/cameras/{c}/camera_info", qos) for c in self.cameras}
        arm_topic = f"/{v['controller']}/joint_trajectory"
        # The display needs readings only at camera frames (10 Hz of a 100 Hz stream): they
        # are taken then, from a subscription on a node no executor spins (nodes/sampled.py).
        self.input_reader = reader_node(self)
        self.reading_input = SampledInput(self.input_reader, BalanceReading, "/balance/reading",
                                          measurement_qos(50), raw=False)
        self.inputs = {  # awaited at each reset: commands and the display's reading from the first step
            arm_topic: self.create_subscription(JointTrajectory, arm_topic, self.on_trajectory, command_qos()),
            "/panda_gripper/command": self.create_subscription(
                GripperCommand, "/panda_gripper/command", self.on_gripper, command_qos()),
            "/balance/reading": self.reading_input.subscription,
        }
        self.create_service(ResetEpisode, "/lab_sim/reset", self.on_reset)
        self.create_service(SaveCheckpoint, "/lab_sim/save_checkpoint", self.on_save)
        self.create_service(RestoreCheckpoint, "/lab_sim/restore_checkpoint", self.on_restore)
        # Its own callback group: while an advance awaits its commands, the command
        # subscriptions (default, mutually exclusive group) must still run.
        self.create_service(Advance, "/lab_sim/advance", self.on_advance,
                            callback_group=MutuallyExclusiveCallbackGroup())
        if self.step_mode == "realtime":
            self._wall_anchor = None
            self.create_timer(0.01, self.realtime_tick)
        # ROS 2 simulation_interfaces: the standard services, over reset and advance.
        self.sim_interfaces = SimulationInterfaces(self, str(v["sim_interfaces_ns"]))
        # Every timed wait of an advance ends on this one timer, created once and only
        # cancelled and reset after: rclpy does not guard destroying a timer inside a
        # callback (a subscription destroyed so crashed the recorder). Steady, like the
        # deadlines: sim time stands still while an advance waits.
        self.waits: list[tuple[float, Future, object]] = []  # (monotonic deadline, future, its result then)
        self.wait_timer = self.create_timer(READING_POLL_S, self._end_due_waits,
                                            clock=RosClock(clock_type=ClockType.STEADY_TIME))
        self.wait_timer.cancel()

    # commands ---------------------------------------------------------------
    def on_trajectory(self, msg: JointTrajectory):
        if self.loaded:
            self._take_command(msg, self.held_arm, self.arm_stamps, self._apply_trajectory)

    def on_gripper(self, msg: GripperCommand):
        if self.loaded:
            self._take_command(msg, self.held_gripper, self.gripper_stamps, self._apply_gripper)

    def _take_command(self, msg, held: deque, stamps: CommandedBoundaries, apply) -> None:
        """One arm or gripper command: applied now, or held until sim time reaches its stamp.
        Either way it replaces the held commands of its kind stamped at or after its own (JTC
        replace semantics: what was planned from its boundary on), but held ones whose
        boundary is reached are applied first. Its boundary counts as commanded even when a
        later command replaces it (a stop replacing the rows sent ahead): the advance that
        waits for that boundary's command goes on."""
        self._apply_commands_due()
        stamp = _stamp_ns(msg.header.stamp)
        while held and _stamp_ns(held[-1].header.stamp) >= stamp:
            held.pop()
        if self._is_ahead(msg.header.stamp):
            held.append(msg)
        else:
            apply(msg)
        stamps.add(stamp)
        self._wake_waiter()

    def _is_ahead(self, stamp) -> bool:
        """A sync-mode stamp (builtin_interfaces/Time) of a boundary sim time has not reached yet."""
        return self.step_mode == "sync" and stamp_to_s(stamp) > self.backend.sim_time + STAMP_EPS_S

    def _apply_trajectory(self, msg: JointTrajectory) -> None:
        reason = self.follower.replace(msg, self.backend.sim_time, self._arm_targets())
        if reason:
            self.get_logger().warning(f"rejected arm trajectory: {reason}; holding")
            self.follower.clear()
            self.backend.hold_arm()

    def _apply_gripper(self, msg: GripperCommand) -> None:
        check = self.backend.set_gripper(msg.width, msg.speed, msg.force, msg.epsilon_inner,
                                         msg.epsilon_outer, msg.grasp)
        if not check.ok:
            self.get_logger().warning(f"rejected gripper command: {check.reason}")

    def _apply_commands_due(self) -> None:
        """The commands held for a boundary, once sim time has reached it."""
        now = self.backend.sim_time + STAMP_EPS_S
        while self.held_arm and stamp_to_s(self.held_arm[0].header.stamp) <= now:
            self._apply_trajectory(self.held_arm.popleft())
        while self.held_gripper and stamp_to_s(self.held_gripper[0].header.stamp) <= now:
            self._apply_gripper(self.held_gripper.popleft())

    def _wake_waiter(self):
        if self.command_waiter and self.command_waiter[1]() and not self.command_waiter[0].done():
            self.command_waiter[0].set_result("arrived")

    def take_readings(self):
        """The balance readings that arrived since the last look, into this timeline's."""
        for msg, info in self.reading_input.take_all_with_info():
            self.note_reading(msg, info["source_timestamp"])

    def note_reading(self, msg: BalanceReading, published_ns: int = 0):
        """One reading, published (wall ns, 0: unknown) by the balance."""
        if not self.loaded:
            return
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        # Stamped outside this timeline: in flight from before a reset or restore.
        if not self.timeline_start_ns <= stamp <= _ns(self.backend.sim_time):
            return
        # Taken at a frame, not on arrival: one in flight at a restore can carry a stamp
        # this timeline has reached again since; it was published before this one's wrench.
        sent = self.wrench_sent_ns.get(stamp)
        if published_ns and sent is not None and published_ns < sent:
            return
        shown = msg.displayed_g if msg.valid and not msg.overload else float("nan")
        self.readings[stamp] = (shown, msg.stable and msg.valid)
        if len(self.readings) > 1000:
            del self.readings[next(iter(self.readings))]

    def _new_timeline(self):
        """At a reset or restore: sim time starts again, the readings owed with it; an
        advance still waiting for a reading or for commands of the old timeline gives up,
        and commands held for a boundary of the old timeline are dropped."""
        self.timeline += 1
        self.last_joints, self.last_world = None, b""
        self.held_arm.clear()
        self.held_gripper.clear()
        self.arm_stamps.clear()
        self.gripper_stamps.clear()
        self.timeline_start_ns = _ns(self.backend.sim_time)
        self.wrench_stamps.clear()
        self.wrench_sent_ns.clear()
        self.reading_input.take_all()  # all of the old timeline: nothing of the new one is out yet
        self.readings.clear()
        self.display_waits = True
        self._end_command_wait()

    def _end_command_wait(self) -> None:
        """A reset or restore: the commands an advance waits for belong to the old timeline."""
        if self.command_waiter is not None and not self.command_waiter[0].done():
            self.command_waiter[0].set_result("reset")

    def show_reading_for_frame(self, t: float) -> int | None:
        """Put the newest reading stamped at least DISPLAY_LAG_S before t on the display;
        the stamp (ns) of the reading the frame is owed while it has not arrived."""
        if not self.backend.has_load_cell:
            return None
        self.take_readings()
        due = _ns(t - DISPLAY_LAG_S) + 1000  # 1 us: rounding of sim time sums
        owed = next((stamp for stamp in reversed(self.wrench_stamps) if stamp <= due), None)
        shown = next((stamp for stamp in reversed(self.readings) if stamp <= due), None)
        if shown is not None:
            self.backend.set_display(*self.readings[shown])
        return None if owed is None or owed in self.readings else owed

    async def _await_reading(self, owed: int) -> bool:
        """Whether the reading stamped ``owed`` (ns) arrived within DISPLAY_WAIT_S; gives up
        early when a reset or restore starts a new timeline meanwhile."""
        timeline = self.timeline
        deadline = time.monotonic() + DISPLAY_WAIT_S
        while self.timeline == timeline:
            self.take_readings()
            if owed in self.readings:
                return True
            if time.monotonic() >= deadline:
                return False
            await self._pause(READING_POLL_S)
        return False

    async def _pause(self, seconds: float) -> None:
        """Let the executor run other callbacks for about ``seconds``."""
        await self._resolve_after(seconds, Future(), True)

    def _resolve_after(self, seconds: float, future: Future, result) -> Future:
        """``future``, given ``result`` after ``seconds`` unless it is done before."""
        self.waits.append((time.monotonic() + seconds, future, result))
        if self.wait_timer.is_canceled():
            self.wait_timer.reset()
        return future

    def _end_due_waits(self) -> None:
        """Give each wait past its deadline its result; stop ticking when none is left."""
        now = time.monotonic()
        waiting = []
        for deadline, future, result in self.waits:
            if future.done():
                continue
            if now >= deadline:
                future.set_result(result)
            else:
                waiting.append((deadline, future, result))
        self.waits = waiting
        if not waiting:
            self.wait_timer.cancel()

    def _arm_targets(self):
        return tuple(float(x) for x in self.backend.data.ctrl[:7])

    # stepping ---------------------------------------------------------------
    def advance_by(self, duration_s: float) -> None:
        """Realtime: frames show the newest owed reading that has arrived."""
        for t in self.steps(duration_s):
            self.show_reading_for_frame(t)
            self.publish_cameras(t)

    async def advance_synced(self, duration_s: float) -> str:
        """Sync: each frame waits for the reading it is owed (DISPLAY_LAG_S). Returns ''
        or why the advance stopped (a reset or restore while it waited)."""
        timeline = self.timeline
        frames = self.steps(duration_s)
        while True:
            # Measurements are held only while physics runs: they go out before each frame
            # (its reading may be owed for one of them) and before the answer, and nothing
            # is held while a frame waits (a reset may publish meanwhile).
            self.holding = True
            try:
                t = next(frames, None)
            finally:
                self.holding = False
                self.release_held()
            if t is None:
                return ""
            owed = self.show_reading_for_frame(t)
            # Without a balance on the graph (a test of lab_sim alone) nothing is coming.
            if owed is not None and self.display_waits and self.inputs["/balance/reading"].get_publisher_count():
                arrived = await self._await_reading(owed)
                if self.timeline != timeline:
                    return RESET_DURING_ADVANCE
                self.show_reading_for_frame(t)
                if not arrived:
                    self.display_waits = False
                    self.get_logger().warning(
                        f"no balance reading stamped {owed * 1e-9:.3f} s within {DISPLAY_WAIT_S} s: the frame at "
                        f"{t:.3f} s shows an older one, and frames no longer wait until the next reset")
            self.publish_cameras(t)

    def steps(self, duration_s: float):
        """Physics over duration_s with the measurements due on the way; yields the sim
        time of each camera frame due, which the caller renders (after the display)."""
        dt = self.backend.timestep
        frame = self.publish_due()  # the state at the boundary itself (t = 0 after a reset)
        if frame is not None:
            yield frame
        for _ in range(int(round(duration_s / dt))):
            if self.held_arm or self.held_gripper:
                self._apply_commands_due()
            target = self.follower.target_at(self.backend.sim_time)
            if target is not None:
                # The follower's targets come in panda_joint1..7 order, as floats.
                if check_ordered_arm_targets(target).ok:
                    self.backend.apply_arm_targets(target)
            self.backend.step(1)
            frame = self.publish_due()
            if frame is not None:
                yield frame
        self._apply_commands_due()  # the next boundary's, held while this interval ran

    def publish_due(self) -> float | None:
        """Publish the measurement due now; the sim time when a camera frame is due too."""
        t = self.backend.sim_time
        camera_due = t + 1e-9 >= self.next_camera
        # Every camera tick has its measurement, and the measurements keep their own period
        # from the reset whatever the camera rate, so that every control boundary on it is
        # measured (at the default rates the two coincide anyway).
        if camera_due or t + 1e-9 >= self.next_measure:
            self.publish_measurements(t, environment_may_act=camera_due)
        while t + 1e-9 >= self.next_measure:
            self.next_measure += self.measure_period
        if not camera_due:
            return None
        # Frames keep their grid too (k / camera_rate from the reset): a frame due between two
        # physics steps is rendered at the next, and a policy's frame of the last tick
        # (floor(t * camera_rate) / camera_rate) is found at every boundary.
        while t + 1e-9 >= self.next_camera:
            self.next_camera += self.camera_period
        return t

    @staticmethod
    def wrench_msg(w, stamp) -> WrenchStamped:
        msg = WrenchStamped()
        msg.header.stamp, msg.header.frame_id = stamp, w.frame_id
        (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) = w.force
        (msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = w.torque
        return msg

    def publish_measurements(self, t: float, environment_may_act: bool = True) -> None:
        m = self.backend.measure()
        # The environment acts only at a camera tick, so that the frame of this tick (taken
        # after it) is the first the cameras deliver from then on: no observation after it
        # can carry an older image (the policy bridge takes the frame of the last tick).
        # It acts before anything of this instant is published.
        if self.environment is not None and environment_may_act:
            happened = self.environment.update(m, self.backend.model, self.backend.data)
            if happened:  # the state changed at this instant: publish it after the change, saying why
                m = dataclasses.replace(self.backend.measure(), environment=happened)
        stamp = s_to_stamp(t, Time())
        # Volatile topics go out only while someone reads them: a sample no reader has
        # matched is dropped anyway, and each write costs the middleware tens of us.
        if self.pub_clock.get_subscription_count():
            self._publish(self.pub_clock, Clock(clock=stamp))
        js = self.backend.joint_state()
        jmsg = JointState(name=list(js.names), position=list(js.position), velocity=list(js.velocity),
                          effort=list(js.effort))
        jmsg.header.stamp = stamp
        if self.pub_joints.get_subscription_count():  # none in sync mode: the advance's answer carries it
            self._publish(self.pub_joints, jmsg)
        self.last_joints = jmsg
        if self.backend.has_load_cell:
            self._publish(self.pub_wrench, self.wrench_msg(self.backend.pan_wrench(), stamp))
        self.last_world = self.world_encoder(m, self.family.support_labels(m))
        self._publish(self.pub_world, self.last_world)

    def _publish(self, publisher, msg) -> None:
        if self.holding:
            self.held.setdefault(publisher, []).append(msg)
        else:
            self._write(publisher, msg)

    def release_held(self) -> None:
        """Publish the measurements held so far, each topic's in order."""
        held, self.held = self.held, {}
        for publisher, messages in held.items():
            for msg in messages:
                self._write(publisher, msg)

    def _write(self, publisher, msg) -> None:
        if publisher is not self.pub_wrench:
            publisher.publish(msg)
            return
        stamp_ns = _stamp_ns(msg.header.stamp)
        self.wrench_sent_ns[stamp_ns] = time.time_ns()  # before: the reading comes after
        if len(self.wrench_sent_ns) > 1000:
            del self.wrench_sent_ns[next(iter(self.wrench_sent_ns))]
        publisher.publish(msg)
        self.wrench_stamps.append(stamp_ns)  # each wrench published is owed a reading

    def publish_cameras(self, t: float) -> None:
        stamp = s_to_stamp(t, Time())
        for cam in self.cameras:
            if self.pub_images[cam].get_subscription_count() == 0:
                continue
            pixels = self.backend.render(cam)
            if self.environment is not None and self.environment.occluded(t):
                pixels = np.zeros_like(pixels)  # the occluder: nothing useful, same size and encoding
            img = Image(height=pixels.shape[0], width=pixels.shape[1], encoding="rgb8", is_bigendian=0,
                        step=pixels.shape[1] * 3)
            img.data = image_data(pixels)  # one copy of the frame, not two (msgconv.image_data)
            img.header.stamp, img.header.frame_id = stamp, camera_frame_id(cam)
            self.pub_images[cam].publish(img)
            if self.pub_info[cam].get_subscription_count():
                info = CameraInfo(height=img.height, width=img.width)
                info.header = img.header
                self.pub_info[cam].publish(info)

    def publish_static_frames(self) -> None:
        from labference_ros.sim.frames import cell_frames

        transforms = []
        for f in cell_frames(self.backend.model, self.backend.data, self.family.cell_description()):
            t = TransformStamped(child_frame_id=f.child)
            t.header.frame_id = f.parent
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = f.translation
            q = t.transform.rotation
            q.w, q.x, q.y, q.z = f.quaternion
            transforms.append(t)
        self.pub_tf_static.publish(TFMessage(transforms=transforms))

    def realtime_tick(self):
        if not self.loaded:
            return
        now = time.monotonic()
        if self._wall_anchor is None:
            self._wall_anchor = (now, self.backend.sim_time)
        due = self._wall_anchor[1] + (now - self._wall_anchor[0]) * self.realtime_factor
        if due > self.backend.sim_time:
            # At most one measurement period per tick: behind the wall clock (rendering is
            # slow), physics catches up in steps with the commands that arrive in between,
            # never in one burst that follows a stale target and then skips the rows the
            # bridge sent meanwhile (the arm would trail its plan by tenths of a radian).
            self.advance_by(min(due - self.backend.sim_time, self.measure_period))

    # services ---------------------------------------------------------------
    def on_reset(self, request, response):
        self._end_command_wait()  # now, not after the load: the advance answers once this returns
        await_matched(self, self.inputs, float(self.get_parameter("match_timeout_s").value))
        try:
            instance = self.family.instance_from_json(request.instance_json)
            self.backend.load(instance)
            self.environment = self.family.make_environment(instance)
        except Exception as exc:  # a broken instance is reported, the node stays up
            response.success, response.message = False, f"reset failed: {exc}"
            self.loaded = False
            return response
        self.loaded = True
        self.follower.clear()
        self._new_timeline()
        self.next_measure = self.next_camera = 0.0
        if self.step_mode == "realtime":
            self._wall_anchor = None
        # Tare first; measurements start with the first advance, after the tare is out.
        if self.backend.has_load_cell:
            self.pub_tare.publish(self.wrench_msg(self.backend.empty_pan_wrench(), s_to_stamp(0.0, Time())))
        self.publish_static_frames()
        response.success, response.message = True, f"loaded {instance.instance_id}"
        response.layout_hash, response.sim_time = instance.layout_hash, self.backend.sim_time
        response.scene_hash = self.backend.scene_hash()
        return response

    async def on_advance(self, request, response):
        """One advance at a time: one asked while another runs waits for it to end (the
        caller's next rows, sent ahead); a third is refused."""
        running = self.advance_done is not None and not self.advance_done.done()
        if running and self.loaded and self.step_mode == "sync" and not self.advance_waiting:
            timeline = self.timeline
            self.advance_waiting = True
            try:
                await self.advance_done
            finally:
                self.advance_waiting = False
            if self.timeline != timeline:
                response.success, response.message = False, RESET_DURING_ADVANCE
                return response
            running = self.advance_done is not None and not self.advance_done.done()
        if running:
            response.success, response.message = False, ADVANCE_RUNNING
            return response
        self.advance_done = Future()
        try:
            return await self._serve_advance(request, response)
        finally:
            self.advance_done.set_result(True)

    async def _serve_advance(self, request, response):
        refused = ("no scene loaded" if not self.loaded
                   else "advance is only served in sync mode" if self.step_mode != "sync" else "")
        if refused:
            response.success, response.message = False, refused
            return response
        if self._is_ahead(request.command_stamp):
            # Stale (asked before a reset or restore, or after an advance before it failed): an
            # advance starts at the boundary it names.
            response.success = False
            response.message = (f"command_stamp {stamp_to_s(request.command_stamp):.3f} s is ahead of "
                                f"sim time {self.backend.sim_time:.3f} s")
            return response
        if not (math.isfinite(request.duration_s) and 0.0 <= request.duration_s <= 10.0):
            response.success, response.message = False, f"bad duration {request.duration_s}"
            return response
        want = _stamp_ns(request.command_stamp)
        arm_wanted = [want] * request.require_arm_command + [_stamp_ns(s) for s in request.arm_command_stamps]
        gripper_wanted = ([want] * request.require_gripper_command
                          + [_stamp_ns(s) for s in request.gripper_command_stamps])
        end = want + _ns(request.duration_s)
        outside = [s for s in arm_wanted + gripper_wanted if not want <= s < max(end, want + 1)]
        if outside:
            response.success = False
            response.message = (f"a command stamp ({outside[0] * 1e-9:.3f} s) lies outside the interval "
                                f"[{want * 1e-9:.3f}, {end * 1e-9:.3f}) s")
            return response

        def arrived():
            return all(s in self.arm_stamps for s in arm_wanted) and all(s in self.gripper_stamps
                                                                         for s in gripper_wanted)

        # Commands of this control boundary must be applied before physics moves,
        # whatever order DDS delivered the topic and the service request in.
        if not arrived():
            timeline = self.timeline
            future = Future()
            self.command_waiter = (future, arrived)
            try:
                ended = await self._resolve_after(self.command_wait_s, future, "timeout")
            finally:
                self.command_waiter = None  # its own: no other advance starts while one waits
            if ended == "timeout":
                response.success, response.message = False, "commands for this boundary never arrived"
                return response
            if ended == "reset" or self.timeline != timeline:
                response.success, response.message = False, RESET_DURING_ADVANCE
                return response
        self.advancing = True
        try:
            stopped = await self.advance_synced(request.duration_s)
        finally:
            self.advancing = False
        response.success, response.message, response.sim_time = not stopped, stopped, self.backend.sim_time
        if not stopped and self.last_joints is not None:
            response.joint_state = self.last_joints
            if request.include_world_state:
                response.world_state = self.last_world
        return response

    def on_save(self, request, response):
        held = bool(self.held_arm or self.held_gripper)
        if not self.loaded or self.advancing or held:
            response.success = False
            response.message = ("no scene loaded" if not self.loaded else "an advance is running" if self.advancing
                                else "a command for a later boundary is held")
            return response
        blob = pack_checkpoint(self.backend.save_state(), self.follower)
        cid = request.label or uuid.uuid4().hex[:12]
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        path = self.checkpoint_dir / f"{cid}.ckpt"
        path.write_bytes(blob)
        self.checkpoints[cid] = blob
        response.success, response.checkpoint_id, response.path = True, cid, str(path)
        response.sim_time = self.backend.sim_time
        return response

    def on_restore(self, request, response):
        blob = self.checkpoints.get(request.checkpoint_id)
        path = self.checkpoint_dir / f"{request.checkpoint_id}.ckpt"
        if blob is None and path.is_file():
            blob = path.read_bytes()
        if blob is None:
            response.success, response.message = False, f"unknown checkpoint {request.checkpoint_id!r}"
            return response
        try:
            sim_blob, follower = unpack_checkpoint(blob)
            self.backend.restore_state(sim_blob)
            self.follower = follower
            self._new_timeline()  # the display the checkpoint saved stays until new readings
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        self.next_measure = self.next_camera = self.backend.sim_time
        response.success, response.sim_time = True, self.backend.sim_time
        return response

    def close(self):
        self.backend.close()

    def destroy_node(self):
        destroy_reader(self, "input_reader")
        return super().destroy_node()


def _stamp_ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class CommandedBoundaries:
    """The boundaries (stamps, ns) whose commands of one kind arrived in this timeline: the
    newest ``kept``; one is found within the rounding of sim-time sums (a nanosecond)."""

    def __init__(self, kept: int):
        self.kept = kept
        self.order: deque[int] = deque()
        self.stamps: set[int] = set()

    def add(self, stamp_ns: int) -> None:
        if stamp_ns in self.stamps:
            return
        self.order.append(stamp_ns)
        self.stamps.add(stamp_ns)
        if len(self.order) > self.kept:
            self.stamps.discard(self.order.popleft())

    def __contains__(self, stamp_ns: int) -> bool:
        return any(stamp_ns + d in self.stamps for d in range(-STAMP_TOLERANCE_NS, STAMP_TOLERANCE_NS + 1))

    def clear(self) -> None:
        self.order.clear()
        self.stamps.clear()


def _ns(t: float) -> int:
    """Sim time as a message stamp's nanoseconds (msgconv.s_to_stamp's rounding)."""
    sec, nanosec = stamp_parts(t)
    return sec * 1_000_000_000 + nanosec


NODE = LabSim  # what nodes/composed.py builds when lab_sim shares a process


def main(args=None):
    os.environ.setdefault("MUJOCO_GL", "egl")
    raise SystemExit(run_node(LabSim, args))


if __name__ == "__main__":
    main()
