"""lab_sim: the step owner. Publishes clock, joints, cameras, the load-cell wrench
(where the task's scene has a balance) and evaluator world state (nodes/sim_outputs.py);
applies JointTrajectory (JTC replace semantics) and gripper commands; serves reset,
checkpoints and sync-mode advance. The task family (`task`) builds the scene. The sync
protocol (held commands, commanded boundaries, advance waits): sim/sync_protocol.py."""
from __future__ import annotations

import os
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from trajectory_msgs.msg import JointTrajectory

from labference.msg import BalanceReading, GripperCommand
from labference.srv import Advance, ResetEpisode, RestoreCheckpoint, SaveCheckpoint
from labference_ros.core.advance_protocol import ADVANCE_RUNNING, RESET_DURING_ADVANCE
from labference_ros.core.rates import CAMERA_RATE_HZ, MEASUREMENT_RATE_HZ
from labference_ros.nodes.matching import (await_matched, command_qos, measurement_qos, unmatched_readers,
                                           warn_unmatched_readers)
from labference_ros.nodes.repeated_reset import RepeatedReset
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.sim_checkpoints import restore_checkpoint, save_checkpoint
from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
from labference_ros.nodes.sim_interfaces import SimulationInterfaces
from labference_ros.nodes.sim_outputs import SimOutputs
from labference_ros.nodes.steady_waits import CommandWait, SteadyWaits
from labference_ros.sim.checkpoint_store import CheckpointStore
from labference_ros.sim.command_validation import check_ordered_arm_targets
from labference_ros.sim.sync_protocol import DisplayReadings, HeldCommands, MeasurementGrid, advance_wants, time_ns
from labference_ros.sim.trajectory import TrajectoryFollower
from labference_ros.tasks import DEFAULT_FAMILY, family as task_family

# A balance that answers none within this (gone, or polled on its own clock): the frame shows
# what has arrived, and lab_sim stops waiting until the next reset or restore.
DISPLAY_WAIT_S = 5.0
# A frame whose reading has not arrived looks again this often (sim time stands still).
READING_POLL_S = 0.001
MATCH_POLL_S = 0.01  # how often the first advance of a timeline looks at its writers' matching
# An advance whose boundary's commands have not come within this is refused (command_wait_s).
COMMAND_WAIT_S = 10.0


class LabSim(Node):
    def __init__(self, **node_options):
        # node_options: rclpy Node keywords, e.g. a composed process's own arguments per node.
        super().__init__("lab_sim", **node_options)
        p = self.declare_parameters("", [
            ("step_mode", "sync"), ("camera_rate", CAMERA_RATE_HZ), ("measurement_rate", MEASUREMENT_RATE_HZ),
            ("image_width", 128), ("image_height", 128), ("controller", "panda_arm_controller"),
            ("checkpoint_dir", "/tmp/labference_checkpoints"), ("realtime_factor", 1.0),
            ("match_timeout_s", 5.0), ("fiducials", False), ("marker_camera_width", 1280),
            ("marker_camera_height", 960), ("task", DEFAULT_FAMILY),
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
        self.step_mode = v["step_mode"]
        if self.step_mode not in ("sync", "realtime"):
            raise ValueError(f"step_mode must be sync or realtime, got {self.step_mode!r}")
        self.grid = MeasurementGrid(1.0 / float(v["measurement_rate"]), 1.0 / float(v["camera_rate"]))
        self.checkpoints = CheckpointStore(v["checkpoint_dir"])
        self.realtime_factor = float(v["realtime_factor"])
        self.command_wait_s = float(v["command_wait_s"])
        self.follower = TrajectoryFollower()
        self.loaded = False
        self.resets = RepeatedReset()  # a reset asked again after a lost reply is answered, not done again
        # Sync mode: the arm and gripper commands stamped after the current sim time, each
        # applied when sim time reaches its stamp, and the boundaries commanded (an advance
        # that names its boundary waits until that boundary's commands are here).
        self.commands = HeldCommands(self.step_mode == "sync", self._apply_trajectory, self._apply_gripper)
        # One timeline of sim time per reset or restore, and the display's inputs in it.
        self.timeline = 0
        self.display = DisplayReadings()
        self.advancing = False
        # Ends when the advance being served does; an advance asked meanwhile waits on it.
        self.advance_done: Future | None = None
        self.advance_waiting = False
        # Whether this timeline's observed publishers have matched their readers (its
        # first frames go out once: a reader the writer has not matched yet never gets them).
        self.readers_matched = False

        self.out = SimOutputs(self, self.backend, self.family, self.display)
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
        self.waits = SteadyWaits(self, READING_POLL_S)  # every timed wait of an advance
        self.command_wait = CommandWait(self.waits)

    # commands ---------------------------------------------------------------
    def on_trajectory(self, msg: JointTrajectory):
        if self.loaded:
            self.resets.moved()
            self.commands.take_arm(msg, self.backend.sim_time)
            self.command_wait.wake()

    def on_gripper(self, msg: GripperCommand):
        if self.loaded:
            self.resets.moved()
            self.commands.take_gripper(msg, self.backend.sim_time)
            self.command_wait.wake()

    def _apply_trajectory(self, msg: JointTrajectory) -> None:
        arm_targets = tuple(float(x) for x in self.backend.data.ctrl[:7])
        reason = self.follower.replace(msg, self.backend.sim_time, arm_targets)
        if reason:
            self.get_logger().warning(f"rejected arm trajectory: {reason}; holding")
            self.follower.clear()
            self.backend.hold_arm()

    def _apply_gripper(self, msg: GripperCommand) -> None:
        check = self.backend.set_gripper(msg.width, msg.speed, msg.force, msg.epsilon_inner,
                                         msg.epsilon_outer, msg.grasp)
        if not check.ok:
            self.get_logger().warning(f"rejected gripper command: {check.reason}")

    def take_readings(self):
        """The balance readings that arrived since the last look, into this timeline's."""
        for msg, info in self.reading_input.take_all_with_info():
            self.note_reading(msg, info["source_timestamp"])

    def note_reading(self, msg: BalanceReading, published_ns: int = 0):
        """One reading, published (wall ns, 0: unknown) by the balance."""
        if self.loaded:
            self.display.note(msg, published_ns, time_ns(self.backend.sim_time))

    def new_timeline(self):
        """At a reset or restore: sim time starts again, the readings owed with it; an
        advance still waiting for a reading or for commands of the old timeline gives up,
        and commands held for a boundary of the old timeline are dropped."""
        self.timeline += 1
        self.resets.moved()
        self.out.forget_last()
        self.commands.clear()
        self.reading_input.take_all()  # all of the old timeline: nothing of the new one is out yet
        self.display.restart(time_ns(self.backend.sim_time))
        self.command_wait.end()
        self.readers_matched = False

    async def readers_of_the_timeline(self) -> None:
        """Sync mode, once per timeline before its first measurement goes out: wait (the
        executor serving the rest meanwhile) until the observed writers matched every
        reader the graph shows, at most match_timeout_s, or until a reset or restore."""
        if self.readers_matched:
            return
        timeline = self.timeline
        deadline = time.monotonic() + float(self.get_parameter("match_timeout_s").value)
        pending = unmatched_readers(self, self.out.observed())
        while pending and time.monotonic() < deadline and self.timeline == timeline:
            await self.waits.pause(MATCH_POLL_S)
            pending = unmatched_readers(self, self.out.observed())
        if self.timeline != timeline:
            return
        warn_unmatched_readers(self, pending)
        self.readers_matched = True

    def show_reading_for_frame(self, t: float) -> int | None:
        """Put the newest reading stamped at least DISPLAY_LAG_S before t on the display;
        the stamp (ns) of the reading the frame is owed while it has not arrived."""
        if not self.backend.has_load_cell:
            return None
        self.take_readings()
        shown, owed = self.display.for_frame(t)
        if shown is not None:
            self.backend.set_display(*shown)
        return owed

    async def _await_reading(self, owed: int) -> bool:
        """Whether the reading stamped ``owed`` (ns) arrived within DISPLAY_WAIT_S; gives up
        early when a reset or restore starts a new timeline meanwhile."""
        timeline = self.timeline
        deadline = time.monotonic() + DISPLAY_WAIT_S
        while self.timeline == timeline:
            self.take_readings()
            if owed in self.display.readings:
                return True
            if time.monotonic() >= deadline:
                return False
            await self.waits.pause(READING_POLL_S)
        return False

    # stepping ---------------------------------------------------------------
    def advance_by(self, duration_s: float) -> None:
        """Realtime: frames show the newest owed reading that has arrived."""
        for t in self.steps(duration_s):
            self.show_reading_for_frame(t)
            self.out.frames(t)

    async def advance_synced(self, duration_s: float) -> str:
        """Sync: each frame waits for the reading it is owed (DISPLAY_LAG_S). Returns ''
        or why the advance stopped (a reset or restore while it waited)."""
        timeline = self.timeline
        frames = self.steps(duration_s)
        while True:
            # Measurements are held only while physics runs: they go out before each frame
            # (its reading may be owed for one of them) and before the answer, and nothing
            # is held while a frame waits (a reset may publish meanwhile).
            self.out.holding = True
            try:
                t = next(frames, None)
            finally:
                self.out.holding = False
                self.out.release_held()
            if t is None:
                return ""
            owed = self.show_reading_for_frame(t)
            # Without a balance on the graph (a test of lab_sim alone) nothing is coming.
            if owed is not None and self.display.waits and self.inputs["/balance/reading"].get_publisher_count():
                arrived = await self._await_reading(owed)
                if self.timeline != timeline:
                    return RESET_DURING_ADVANCE
                self.show_reading_for_frame(t)
                if not arrived:
                    self.display.waits = False
                    self.get_logger().warning(
                        f"no balance reading stamped {owed * 1e-9:.3f} s within {DISPLAY_WAIT_S} s: the frame at "
                        f"{t:.3f} s shows an older one, and frames no longer wait until the next reset")
            self.out.frames(t)

    def steps(self, duration_s: float):
        """Physics over duration_s with the measurements due on the way; yields the sim
        time of each camera frame due, which the caller renders (after the display)."""
        dt = self.backend.timestep
        frame = self.publish_due()  # the state at the boundary itself (t = 0 after a reset)
        if frame is not None:
            yield frame
        for _ in range(int(round(duration_s / dt))):
            if self.commands:
                self.commands.apply_due(self.backend.sim_time)
            target = self.follower.target_at(self.backend.sim_time)
            if target is not None:
                # The follower's targets come in panda_joint1..7 order, as floats.
                if check_ordered_arm_targets(target).ok:
                    self.backend.apply_arm_targets(target)
            self.backend.step(1)
            frame = self.publish_due()
            if frame is not None:
                yield frame
        self.commands.apply_due(self.backend.sim_time)  # the next boundary's, held while this interval ran

    def publish_due(self) -> float | None:
        """Publish the measurement due now; the sim time when a camera frame is due too."""
        t = self.backend.sim_time
        measure_due, camera_due = self.grid.due(t)
        if measure_due:
            self.out.measurements(t, environment_may_act=camera_due)
        return t if camera_due else None

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
            self.advance_by(min(due - self.backend.sim_time, self.grid.measure_period))

    # services ---------------------------------------------------------------
    def on_reset(self, request, response):
        if self.resets.repeat(request, response):
            self.get_logger().info(f"reset of {request.episode_id} asked again before anything moved: answered again")
            return response
        self.resets.moved()  # a reset that fails leaves no scene to answer for
        self.command_wait.end()  # now, not after the load: the advance answers once this returns
        await_matched(self, self.inputs, float(self.get_parameter("match_timeout_s").value))
        try:
            instance = self.family.instance_from_json(request.instance_json)
            self.backend.load(instance)
            self.out.environment = self.family.make_environment(instance)
        except Exception as exc:  # a broken instance is reported, the node stays up
            response.success, response.message = False, f"reset failed: {exc}"
            self.loaded = False
            return response
        self.loaded = True
        self.follower.clear()
        self.new_timeline()
        self.grid.restart(0.0)
        if self.step_mode == "realtime":
            self._wall_anchor = None  # (realtime frames repeat at every tick: nothing to wait for)
        # Tare first; measurements start with the first advance, after the tare is out.
        if self.backend.has_load_cell:
            self.out.tare()
        self.out.static_frames()
        response.success, response.message = True, f"loaded {instance.instance_id}"
        response.layout_hash, response.sim_time = instance.layout_hash, self.backend.sim_time
        response.scene_hash = self.backend.scene_hash()
        self.resets.answered(request, response)
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
        self.resets.moved()
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
        arm_wanted, gripper_wanted, refused = advance_wants(request, self.backend.sim_time)
        if refused:
            response.success, response.message = False, refused
            return response

        def arrived():
            return self.commands.arrived(arm_wanted, gripper_wanted)

        # Commands of this control boundary must be applied before physics moves,
        # whatever order DDS delivered the topic and the service request in.
        if not arrived():
            timeline = self.timeline
            ended = await self.command_wait.until(arrived, self.command_wait_s)
            if ended == "timeout":
                response.success, response.message = False, "commands for this boundary never arrived"
                return response
            if ended == "reset" or self.timeline != timeline:
                response.success, response.message = False, RESET_DURING_ADVANCE
                return response
        timeline = self.timeline
        await self.readers_of_the_timeline()
        if self.timeline != timeline:
            response.success, response.message = False, RESET_DURING_ADVANCE
            return response
        self.advancing = True
        try:
            stopped = await self.advance_synced(request.duration_s)
        finally:
            self.advancing = False
        response.success, response.message, response.sim_time = not stopped, stopped, self.backend.sim_time
        if not stopped and self.out.last_joints is not None:
            response.joint_state = self.out.last_joints
            if request.include_world_state:
                response.world_state = self.out.last_world
        return response

    def on_save(self, request, response):
        return save_checkpoint(self, request, response)

    def on_restore(self, request, response):
        return restore_checkpoint(self, request, response)

    def close(self):
        self.backend.close()

    def destroy_node(self):
        destroy_reader(self, "input_reader")
        return super().destroy_node()


NODE = LabSim  # what nodes/composed.py builds when lab_sim shares a process


def main(args=None):
    os.environ.setdefault("MUJOCO_GL", "egl")
    raise SystemExit(run_node(LabSim, args))


if __name__ == "__main__":
    main()
