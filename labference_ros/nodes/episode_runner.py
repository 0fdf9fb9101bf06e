"""episode_runner: drives every instance of a run through reset, start, watch, finish.

For each instance (fixed before the first episode, written to instances.json):
/lab_sim/reset, /referee/start_episode, /policy_bridge/start_episode; then it
waits until the referee reports physical completion, the bridge reports it is
done (or failed), or the sim-time deadline passes; then /policy_bridge/finish_episode
and /referee/finish_episode, whose scores are persisted before the next episode.
Every attempt is kept; a failure of the evaluation itself is an ERROR row.
The set-ups (sim, operator, rehearsal) and when an episode ends: episodes/watch.py;
the reset, scene check and operator's confirmation before each episode: nodes/scene_setup.py
and episodes/operator.py; the run's records and exit codes: episodes/run_progress.py.
"""
from __future__ import annotations

import sys
import time

from labference.msg import ScoreSnapshot
from labference.srv import FinishEpisode, ResetEpisode, StartEpisode
from rclpy.clock import Clock as SteadyClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from labference_ros.cdr_views import header_stamp_s
from labference_ros.core.rates import CAMERA_RATE_HZ
from labference_ros.episodes.attempts import Attempt, parse_scores
from labference_ros.episodes.plan import PlanError, RunSettings, episode_id, run_json
from labference_ros.episodes.run_progress import (  # noqa: F401 (the exit codes, named where the runner is)
    EXIT_INTERRUPTED, EXIT_OK, EXIT_SETUP, EXIT_UNSCORED, RunProgress, say)
from labference_ros.episodes.system_records import record_policy_profile, record_system_usage
from labference_ros.episodes.watch import SETUP_MODES, EpisodeWatch, connected_topics, late_rows_event, stop_reason
from labference_ros.nodes.operator_desk import OperatorDesk
from labference_ros.nodes.runner_graph import graph_missing
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
from labference_ros.nodes.scene_setup import set_up_scene
from labference_ros.nodes.stepwise import Script, ServiceCall, ServiceFailure, Until
from labference_ros.tasks import DEFAULT_FAMILY, family as task_family

TICK_S = 0.05
# Inner timeouts shorter than outer ones, so each is blamed on the side that did not answer:
# the policy bridge's start waits for the tested system's reset (a policy server's
# /reset: at most its client's timeout_s, which should not exceed service_timeout_s)
# and for its inputs to match (match_timeout_s, 5 s). The runner waits this much longer
# than service_timeout_s for that answer, so a hung server is the bridge's
# policy_timeout, not the runner's service_timeout.
BRIDGE_START_EXTRA_S = 10.0
# An idempotent call without an answer this long is asked again (a finish waits at most its
# finish_timeout_s, 5 s, for the measurements in flight before it answers).
RESEND_AFTER_S = 8.0


class EpisodeRunner(Node):
    def __init__(self):
        super().__init__("episode_runner")
        p = {name: self.declare_parameter(name, default).value for name, default in (
            ("episodes", 3), ("system", "scripted_expert"), ("condition", "basic"), ("seed", 0),
            ("output_dir", "runs/{timestamp}"), ("instances", ""), ("deadline_s", 60.0),
            ("step_mode", "sync"), ("camera_rate", CAMERA_RATE_HZ), ("service_timeout_s", 30.0),
            ("stall_timeout_s", 60.0), ("startup_timeout_s", 120.0), ("record", True),
            ("support", "none"), ("task", DEFAULT_FAMILY), ("image_width", 320), ("image_height", 240),
            ("setup", "sim"), ("setup_timeout_s", 300.0), ("confirm", "auto"), ("arm_homing", False),
            ("arm_home_timeout_s", 120.0), ("scene_node", ""), ("shadow_referee", True))}
        # sim: lab_sim resets the scene; operator: a person sets it up and the reset
        # service (the world estimator's scene check) says when it matches the instance.
        self.setup = str(p["setup"])
        if self.setup not in SETUP_MODES:
            raise ValueError(f"setup must be one of {', '.join(SETUP_MODES)}, got {self.setup!r}")
        self.setup_timeout_s = float(p["setup_timeout_s"])
        # auto: an episode starts once its scene matches; operator: also once a person confirmed
        # that hands are clear. The confirmations and the operator's steps: operator.jsonl.
        self.desk = OperatorDesk(self, str(p["confirm"]), served=self.setup != "sim")
        # A real arm homed by its bridge before the session and after each episode: waited for.
        self.arm_homing = bool(p["arm_homing"]) and self.setup != "sim"
        self.arm_home_timeout_s = float(p["arm_home_timeout_s"])
        has_balance = task_family(str(p["task"])).cell_description().balance is not None
        # A rehearsal's shadow referee scores from the simulator's own state: none where the
        # simulator is another one (it offers no such state).
        self.shadow = self.setup == "rehearsal" and bool(p["shadow_referee"])
        self.connected_topics = connected_topics(self.setup, has_balance, str(p["step_mode"]), self.shadow)
        # Who serves the reset (a graph may remap it: sim_loader through simulation_interfaces).
        self.scene_node = str(p["scene_node"]) or ("world_estimator" if self.setup == "operator" else "lab_sim")
        self.record = bool(p["record"])
        self.settings = RunSettings(**{k: p[k] for k in RunSettings.__dataclass_fields__})
        self.service_timeout_s = float(p["service_timeout_s"])
        self.stall_timeout_s = float(p["stall_timeout_s"])
        self.startup_timeout_s = float(p["startup_timeout_s"])
        self.done = False
        self.run = RunProgress(self.settings)
        self.current: Attempt | None = None
        self.assets: dict = {}  # run.json's assets section (TaskFamily.assets), once per run
        self.watch = EpisodeWatch(self.shadow, self.settings.deadline_s)
        self.sim_now: float | None = None
        self.sim_seen_wall = time.monotonic()

        # Best effort takes /clock from reliable and best-effort publishers alike.
        self.clock_reader = self.clock_input = None
        if self.setup != "operator":  # a real cell's time is the nodes' clock (tick)
            # Read at each tick, the newest only: a node no executor spins holds the
            # subscription, so 100 Hz of /clock costs no callback (nodes/sampled.py).
            self.clock_reader = reader_node(self, "clock")
            self.clock_input = SampledInput(self.clock_reader, Clock, "/clock",
                                            QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        self.create_subscription(ScoreSnapshot, "/referee/scores", self.on_scores, 10)
        self.create_subscription(String, "/policy_bridge/status", self.on_status, 10)
        self.create_subscription(String, "/hardware/fault", self.on_hardware_fault, 10)
        # The tested system's rows too late for the real arm (the same bridge): its own event.
        self.create_subscription(String, "/arm/late_rows", self.on_late_rows, 10)
        self.reset = self.create_client(ResetEpisode, "/lab_sim/reset")
        self.referee_start = self.create_client(StartEpisode, "/referee/start_episode")
        self.referee_finish = self.create_client(FinishEpisode, "/referee/finish_episode")
        self.bridge_start = self.create_client(StartEpisode, "/policy_bridge/start_episode")
        self.bridge_finish = self.create_client(FinishEpisode, "/policy_bridge/finish_episode")
        self.recorder_start = self.create_client(StartEpisode, "/recorder/start_episode")
        self.scene_check = self.shadow_start = self.shadow_finish = None
        if self.setup == "rehearsal":
            self.scene_check = self.create_client(ResetEpisode, "/world_estimator/reset")
        if self.shadow:
            self.shadow_start = self.create_client(StartEpisode, "/shadow_referee/start_episode")
            self.shadow_finish = self.create_client(FinishEpisode, "/shadow_referee/finish_episode")
            self.create_subscription(ScoreSnapshot, "/shadow_referee/scores", self.on_shadow_scores, 10)
        self.recorder_finish = self.create_client(FinishEpisode, "/recorder/finish_episode")
        self.script = Script(self.evaluation())
        # Steady, not sim time: the procedure must go on while the simulator is paused or gone.
        self.timer = self.create_timer(TICK_S, self.tick, clock=SteadyClock(clock_type=ClockType.STEADY_TIME))

    @property
    def exit_code(self) -> int:  # what run_node exits with
        return self.run.exit_code

    # ------------------------------------------------------------ inputs
    def read_clock(self):
        data = self.clock_input.newest() if self.clock_input is not None else None
        if data is not None:
            self.on_time(header_stamp_s(data))  # rosgraph_msgs/Clock starts with its Time, as a Header does

    def on_time(self, t: float):
        if self.sim_now is None or t != self.sim_now:
            self.sim_seen_wall = time.monotonic()
        self.sim_now = t

    def on_scores(self, msg):
        if msg.physically_complete == 1:
            self.watch.complete.add(msg.episode_id)

    def on_shadow_scores(self, msg):
        if msg.physically_complete == 1:
            self.watch.shadow_complete.add(msg.episode_id)

    def on_status(self, msg):
        try:
            self.watch.note_bridge_status(msg.data)
        except (ValueError, KeyError, TypeError):
            self.get_logger().warning(f"unreadable /policy_bridge/status: {msg.data!r}")

    def on_hardware_fault(self, msg):
        try:
            self.watch.note_hardware_fault(msg.data)
        except (ValueError, KeyError, TypeError):
            self.get_logger().warning(f"unreadable /hardware/fault: {msg.data!r}")

    def on_late_rows(self, msg):
        try:
            eid, event = late_rows_event(msg.data)
        except (ValueError, KeyError, TypeError):
            return self.get_logger().warning(f"unreadable /arm/late_rows: {msg.data!r}")
        if self.current is not None and self.current.episode_id == eid:
            self.current.system_events.append(event)
            say(f"episode {eid}: {event['cause']} [{event['kind']}]")

    def tick(self):
        if self.setup == "operator":
            self.on_time(self.get_clock().now().nanoseconds * 1e-9)
        else:
            self.read_clock()
        if self.script.tick():
            self.timer.cancel()
            self.done = True

    def clients_needed(self):
        recording = (self.recorder_start, self.recorder_finish) if self.record else ()
        rehearsal = tuple(c for c in (self.scene_check, self.shadow_start, self.shadow_finish) if c is not None)
        return (self.reset, self.referee_start, self.referee_finish, self.bridge_start, self.bridge_finish,
                *recording, *rehearsal)

    def graph_missing(self) -> list[str]:
        """What the graph still lacks before the first episode (nodes/runner_graph.py)."""
        return graph_missing(self, self.clients_needed(), self.connected_topics,
                             needs_oracle=self.settings.support not in ("", "none"))

    def graph_ready(self):
        return None if self.graph_missing() else True

    def call(self, client, request, idempotent: bool = False):
        """A service call; an idempotent one (the referees', the recorder's and the bridge's start and
        finish, lab_sim's reset, the scene check) is asked again every RESEND_AFTER_S without an answer, as its reply may be dropped."""
        return ServiceCall(client, request, self.service_timeout_s, RESEND_AFTER_S if idempotent else None)

    # --------------------------------------------------------- procedure
    def evaluation(self):
        try:
            run_dir, instances = self.run.plan()
        except PlanError as exc:
            self.get_logger().error(str(exc))
            self.run.exit_code = EXIT_SETUP
            return
        except OSError as exc:  # an unwritable or full output directory
            self.get_logger().error(f"cannot write the run's records: {exc.strerror or exc} ({exc.filename})")
            self.run.exit_code = EXIT_SETUP
            return
        try:
            self.assets = task_family(self.settings.task).assets()
        except (OSError, NotImplementedError) as exc:  # identities then compare as unknown, never as equal
            self.get_logger().warning(f"asset revision unknown: {exc}")
        # Until the last episode is recorded, a stop means "interrupted" (run_node reads
        # exit_code before close() runs).
        self.run.exit_code = EXIT_INTERRUPTED
        self.get_logger().info(f"run {run_dir}: {len(instances)} episodes of {self.settings.system}")
        # Nodes start slowly (the simulator loads its scene) and discovery can take
        # seconds: wait for the whole graph once, then hold every call to service_timeout_s.
        missing = yield Until(self.graph_ready, self.startup_timeout_s)
        if missing is None:
            self.get_logger().error(f"graph not ready after {self.startup_timeout_s:g} s, missing "
                                    f"{', '.join(self.graph_missing())}; episodes will record the failures")
        self.desk.write_events()  # those that came before the run directory was made
        if self.arm_homing:
            yield from self.desk.wait_homed("", self.arm_home_timeout_s)
        self.run.open_bar()
        for index, instance in enumerate(instances):
            attempt = yield from self.episode(run_dir, index, instance)
            self.current = None
            if not self.run.record(attempt):
                return
        self.run.finish(run_dir)

    def episode(self, run_dir, index, instance):
        eid = episode_id(index, instance)
        attempt = self.current = Attempt(eid, index, instance.instance_id, self.settings.system,
                                         instance.condition)
        wall0 = time.monotonic()
        unreachable: set[str] = set()  # nodes not to wait for again in this episode

        def failed(answer, node: str, what: str) -> bool:
            if isinstance(answer, ServiceFailure):
                attempt.fail(f"{what}: {answer}")
                if answer.reason == "unavailable":
                    unreachable.add(node)
                return True
            if not answer.success:
                attempt.fail(f"{what} refused: {answer.message}")
                return True
            return False

        out_dir = self.run.log.episode_dir(eid)
        self.desk.open_episode(out_dir / "operator.jsonl" if self.setup != "sim" else None)
        instance_json = instance.to_json()
        assets = dict(self.assets)  # plus the scene lab_sim compiled for this instance

        def start_request():  # run.json as known at each start (the scene's hash after the reset)
            return StartEpisode.Request(episode_id=eid, instance_json=instance_json, output_dir=str(out_dir),
                                        run_json=run_json(self.settings, instance, assets))

        sim_start = self.sim_now
        started = True
        task_wall = 0.0
        if self.record:
            # The bag opens before the reset so it holds the episode's tare and first state.
            answer = yield self.call(self.recorder_start, start_request(), idempotent=True)
            started = not failed(answer, "recorder", "recorder start")
        if started:
            try:
                answer = yield from set_up_scene(self, eid, instance_json, self.desk.log)
            except OSError as exc:  # operator.jsonl not writable: the episode cannot be recorded as run
                answer = ServiceFailure("operator.jsonl", "refused", f"cannot write {exc.filename}: "
                                                                     f"{exc.strerror or exc}")
            what = {"sim": f"{self.scene_node} reset", "rehearsal": f"{self.scene_node} reset and scene check"}.get(
                self.setup, "scene set-up")
            started = not failed(answer, self.scene_node, what)
        if started:
            assets["scene_hash"] = answer.scene_hash
            sim_start = answer.sim_time if answer.sim_time > 0 or self.sim_now is None else self.sim_now
            answer = yield self.call(self.referee_start, start_request(), idempotent=True)
            started = not failed(answer, "referee", "referee start")
        if started and self.shadow_start is not None:
            answer = yield self.call(self.shadow_start, start_request(), idempotent=True)
            started = not failed(answer, "shadow_referee", "shadow referee start")
        if started:
            answer = yield ServiceCall(self.bridge_start, start_request(),  # a repeat gets the first answer
                                       self.service_timeout_s + BRIDGE_START_EXTRA_S, RESEND_AFTER_S)
            started = not failed(answer, "policy_bridge", "policy_bridge start")
            if started:
                try:
                    record_policy_profile(out_dir, answer.message)
                except OSError as exc:  # a full disk: the episode cannot be recorded as run
                    attempt.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
        if started:
            self.desk.running = eid  # the operator's pause and resume reach this episode
            self.watch.sim_start = sim_start
            self.sim_seen_wall = task_start = time.monotonic()  # the stall watchdog counts from here
            attempt.reason = yield Until(lambda: self.finish_reason(attempt))
            task_wall = time.monotonic() - task_start
            sim_start = self.watch.sim_start
        else:
            attempt.reason = "error"

        self.desk.running = None
        # Stop the policy first, then let the referee score: scores are in hand
        # before anything is closed.
        sim_end = self.sim_now

        def finish_request():
            return FinishEpisode.Request(episode_id=eid, reason=attempt.reason, sim_time=sim_end or 0.0)

        if "policy_bridge" not in unreachable:
            answer = yield self.call(self.bridge_finish, finish_request(), idempotent=True)
            if not failed(answer, "policy_bridge", "policy_bridge finish"):
                try:
                    record_system_usage(out_dir, answer.message)
                except OSError as exc:
                    attempt.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
        if "referee" not in unreachable:
            answer = yield self.call(self.referee_finish, finish_request(), idempotent=True)
            if not failed(answer, "referee", "referee finish"):
                attempt.scores = parse_scores(answer.scores_json)
                if attempt.scores is None:
                    attempt.fail("referee finish returned no readable scores_json")
        if self.shadow_finish is not None and "shadow_referee" not in unreachable:
            # Its scores are its own records (shadow/scores.json): `labference agreement` compares them.
            answer = yield self.call(self.shadow_finish, finish_request(), idempotent=True)
            failed(answer, "shadow_referee", "shadow referee finish")
        if self.record and "recorder" not in unreachable:
            answer = yield self.call(self.recorder_finish, finish_request(), idempotent=True)
            failed(answer, "recorder", "recorder finish")
        if started and self.desk.hand_present():  # what the hand still holds is let go before the next
            if (yield Until(lambda: self.desk.is_released(eid), self.service_timeout_s)) is None:
                self.get_logger().warning(f"{eid}: the hand's release was not reported within "
                                          f"{self.service_timeout_s:g} s")
        if started and self.arm_homing:  # lifted clear of the scene and homed before the next
            yield from self.desk.wait_homed(eid, self.arm_home_timeout_s)
        # Task time excludes setup (the control protocol): an episode that never started took none.
        total = time.monotonic() - wall0
        attempt.wall_s = task_wall
        attempt.setup_wall_s = total - task_wall
        if sim_start is not None and sim_end is not None:
            attempt.sim_s = max(0.0, sim_end - sim_start)
        return attempt

    def finish_reason(self, attempt: Attempt):
        """The finish reason once the episode should end, else None: what the graph reported
        and the deadline (EpisodeWatch), then a node that left or a sim clock that stalled."""
        reason = self.watch.finish_reason(attempt, self.sim_now)
        if reason is not None:
            return reason
        watched = [(self.scene_node, self.reset), ("referee", self.referee_finish),
                   ("policy_bridge", self.bridge_finish)]
        if self.shadow_finish is not None:
            watched.append(("shadow_referee", self.shadow_finish))
        for node, client in watched:
            if not client.service_is_ready():
                attempt.fail(f"{node} left the graph during the episode")
                return "aborted"
        if time.monotonic() - self.sim_seen_wall > self.stall_timeout_s:
            attempt.fail(f"sim time did not advance for {self.stall_timeout_s:g} s")
            return "aborted"
        return None

    # ------------------------------------------------------------ ending
    def destroy_node(self):
        destroy_reader(self, "clock_reader")
        return super().destroy_node()

    def close(self):
        """Called on SIGINT/SIGTERM too: the episode in flight becomes an ERROR row."""
        if self.script.finished or self.run.log is None:
            return
        self.run.interrupt(self.current, stop_reason() if self.current is not None else "")
        self.get_logger().error(f"stopped after {len(self.run.log.attempts)} of {self.run.planned} episodes")


def make_node():
    return EpisodeRunner()


def main(args=None) -> int:
    return run_node(make_node, args)


if __name__ == "__main__":
    sys.exit(main())
