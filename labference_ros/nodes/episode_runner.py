"""episode_runner: drives every instance of a run through reset, start, watch, finish.

For each instance (fixed before the first episode, written to instances.json):
/lab_sim/reset, /referee/start_episode, /policy_bridge/start_episode; then it
waits until the referee reports physical completion, the bridge reports it is
done (or failed), or the sim-time deadline passes; then /policy_bridge/finish_episode
and /referee/finish_episode, whose scores are persisted before the next episode.
Every attempt is kept; a failure of the evaluation itself is an ERROR row.
setup: sim (lab_sim resets), operator (a real cell: the world estimator's scene check
is asked until it matches), rehearsal (lab_sim resets, then the scene check must
confirm it from the sensors; a shadow referee is started and finished beside the
referee, and an episode completes when both saw it, or 5 s of sim after the first).

Exit code (also `labference launch`'s): 0 every episode ran and was scored;
1 the run could not start (bad settings, instance list, output directory);
3 every episode ran but at least one was not scored (an evaluation-validity
error: each prints one console line with its cause); 4 it was stopped before
every instance ran. summary.json is written in cases 0, 3 and 4.
"""
from __future__ import annotations

import json
import sys
import time

from labference_ros.nodes.runtime import run_node

EXIT_OK, EXIT_SETUP, EXIT_UNSCORED, EXIT_INTERRUPTED = 0, 1, 3, 4
TICK_S = 0.05


def record_policy_profile(out_dir, message: str) -> None:
    """The bridge answers start_episode with the tested system's resolved profile
    (name, privileged flag, ActionSpec and its hash, parameters); run.json keeps it."""
    from labference_ros.core.records import amend_run_json

    try:
        profile = json.loads(message).get("policy") or {}
    except (ValueError, AttributeError):
        return
    if profile and (out_dir / "run.json").exists():
        amend_run_json(out_dir, "policy", profile)
    support = json.loads(message).get("intervention") or {}
    if support.get("compatibility") and (out_dir / "run.json").exists():
        amend_run_json(out_dir, "intervention", {"compatibility": support["compatibility"]})


def record_system_usage(out_dir, message: str) -> None:
    """The bridge answers finish_episode with the tested system's episode summary;
    its `usage` (the agent's per-call tokens and times, per-episode totals) goes
    into run.json. A system without one leaves `usage` out: unknown, never zero."""
    from labference_ros.core.records import amend_run_json

    try:
        usage = (json.loads(message).get("system_summary") or {}).get("usage")
    except (ValueError, AttributeError):
        return
    if isinstance(usage, dict) and (out_dir / "run.json").exists():
        amend_run_json(out_dir, "usage", usage)


# Topics whose publisher and subscriber must both be in the graph before the first episode.
CONNECTED_TOPICS = ("/evaluator/world_state", "/balance/wrench", "/balance/reading", "/joint_states",
                    "/cameras/front/image_raw", "/panda_arm_controller/joint_trajectory",
                    "/panda_gripper/command", "/policy/receipts", "/referee/receipts")
# A real cell has no simulated load cell: the balance itself publishes readings.
OPERATOR_CONNECTED_TOPICS = tuple(t for t in CONNECTED_TOPICS if t != "/balance/wrench")
# The rehearsal's sensing: marker detections, and the simulated load cell behind the serial line.
REHEARSAL_CONNECTED_TOPICS = CONNECTED_TOPICS + ("/markers/poses", "/sim_balance/reading", "/shadow/world_state")
# sim: lab_sim resets the scene; operator: a person sets it up and the world estimator's
# scene check says when it matches; rehearsal: lab_sim resets it, the scene check must then
# confirm it from the sensors, and a shadow referee scores each episode from lab_sim's state.
SETUP_MODES = ("sim", "operator", "rehearsal")
SETUP_RETRY_S = 1.0  # an operator's set-up (a rehearsal's scene check) is checked again this often
REHEARSAL_COMPLETION_GRACE_S = 5.0  # sim seconds the second referee has to see a completion too
# Inner timeouts shorter than outer ones, so each is blamed on the side that did not answer:
# the policy bridge's start waits for the tested system's reset (a policy server's
# /reset: at most its client's timeout_s, which should not exceed service_timeout_s)
# and for its inputs to match (match_timeout_s, 5 s). The runner waits this much longer
# than service_timeout_s for that answer, so a hung server is the bridge's
# policy_timeout, not the runner's service_timeout.
BRIDGE_START_EXTRA_S = 10.0


def _stop_reason() -> str:
    """Why the launcher is stopping the graph ('' when it did not say: another launcher,
    a plain SIGTERM), e.g. "node lab_sim left the graph: it died (exit code 3)"."""
    import os

    path = os.environ.get("LABFERENCE_STOP_REASON_FILE")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    return lines[0] if lines else ""


def _reply_lost(answer) -> bool:
    """A call whose server is there but whose reply never came (not a refusal)."""
    return getattr(answer, "reason", None) == "timeout" and not hasattr(answer, "success")


def make_node():
    from labference.msg import ScoreSnapshot
    from labference.srv import FinishEpisode, ResetEpisode, StartEpisode
    from rclpy.clock import Clock as SteadyClock
    from rclpy.clock import ClockType
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import String
    from tqdm import tqdm

    from labference_ros.cdr_views import header_stamp_s
    from labference_ros.core.failures import LATE_ROWS, console_line
    from labference_ros.core.summary import format_rate, format_table
    from labference_ros.episodes.attempts import Attempt, AttemptLog, parse_scores
    from labference_ros.episodes.plan import (
        PlanError,
        RunSettings,
        episode_id,
        plan_instances,
        resolve_run_dir,
        run_json,
        write_plan,
    )
    from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
    from labference_ros.nodes.stepwise import Script, ServiceCall, ServiceFailure, Until
    from labference_ros.tasks import family as task_family

    class EpisodeRunner(Node):
        def __init__(self):
            super().__init__("episode_runner")
            p = {name: self.declare_parameter(name, default).value for name, default in (
                ("episodes", 3), ("system", "scripted_expert"), ("condition", "basic"), ("seed", 0),
                ("output_dir", "runs/{timestamp}"), ("instances", ""), ("deadline_s", 60.0),
                ("step_mode", "sync"), ("camera_rate", 10.0), ("service_timeout_s", 30.0),
                ("stall_timeout_s", 60.0), ("startup_timeout_s", 120.0), ("record", True),
                ("support", "none"), ("task", "feedback_weighing"), ("image_width", 320), ("image_height", 240),
                ("setup", "sim"), ("setup_timeout_s", 300.0))}
            # sim: lab_sim resets the scene; operator: a person sets it up and the reset
            # service (the world estimator's scene check) says when it matches the instance.
            self.setup = str(p["setup"])
            if self.setup not in SETUP_MODES:
                raise ValueError(f"setup must be one of {', '.join(SETUP_MODES)}, got {self.setup!r}")
            self.setup_timeout_s = float(p["setup_timeout_s"])
            self.connected_topics = {"operator": OPERATOR_CONNECTED_TOPICS,
                                     "rehearsal": REHEARSAL_CONNECTED_TOPICS}.get(self.setup, CONNECTED_TOPICS)
            if task_family(str(p["task"])).cell_description().balance is None:  # no balance, no load cell
                self.connected_topics = tuple(t for t in self.connected_topics if not t.startswith("/balance/"))
            if str(p["step_mode"]) == "sync":  # the bridge takes the joint state from lab_sim's advance answers
                self.connected_topics = tuple(t for t in self.connected_topics if t != "/joint_states")
            self.scene_node = "world_estimator" if self.setup == "operator" else "lab_sim"  # who serves the reset
            self.record = bool(p["record"])
            self.settings = RunSettings(**{k: p[k] for k in RunSettings.__dataclass_fields__})
            self.service_timeout_s = float(p["service_timeout_s"])
            self.stall_timeout_s = float(p["stall_timeout_s"])
            self.startup_timeout_s = float(p["startup_timeout_s"])
            self.done, self.exit_code = False, EXIT_OK
            self.log: AttemptLog | None = None
            self.current: Attempt | None = None
            self.planned = 0
            self.assets: dict = {}  # run.json's assets section (TaskFamily.assets), once per run
            self.bar = None
            # What the graph reports, keyed by episode id so a late message of an
            # earlier episode never ends the current one.
            self.sim_now: float | None = None
            self.sim_seen_wall = time.monotonic()
            self.complete: set[str] = set()
            self.bridge: dict[str, tuple[str, str]] = {}
            self.sim_start: float | None = None  # sim time at the current episode's reset

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
            # A real arm's faults (nodes/franka_arm_bridge.py): the episode is a validity error.
            self.hardware_faults: dict[str, str] = {}
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
                self.shadow_start = self.create_client(StartEpisode, "/shadow_referee/start_episode")
                self.shadow_finish = self.create_client(FinishEpisode, "/shadow_referee/finish_episode")
                self.create_subscription(ScoreSnapshot, "/shadow_referee/scores", self.on_shadow_scores, 10)
            self.shadow_complete: set[str] = set()
            self.first_complete_t: dict[str, float] = {}  # sim time one of the two referees saw completion
            self.recorder_finish = self.create_client(FinishEpisode, "/recorder/finish_episode")
            self.script = Script(self.evaluation())
            # Steady, not sim time: the procedure must go on while the simulator is paused or gone.
            self.timer = self.create_timer(TICK_S, self.tick, clock=SteadyClock(clock_type=ClockType.STEADY_TIME))

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
                self.complete.add(msg.episode_id)

        def on_shadow_scores(self, msg):
            if msg.physically_complete == 1:
                self.shadow_complete.add(msg.episode_id)

        def on_status(self, msg):
            try:
                data = json.loads(msg.data)
                self.bridge[str(data["episode_id"])] = (str(data["state"]), str(data.get("reason", "")))
            except (ValueError, KeyError, TypeError):
                self.get_logger().warning(f"unreadable /policy_bridge/status: {msg.data!r}")

        def on_hardware_fault(self, msg):
            try:
                data = json.loads(msg.data)
                self.hardware_faults.setdefault(str(data["episode_id"]), str(data["cause"]))
            except (ValueError, KeyError, TypeError):
                self.get_logger().warning(f"unreadable /hardware/fault: {msg.data!r}")

        def on_late_rows(self, msg):
            try:
                data = json.loads(msg.data)
                eid, cause = str(data["episode_id"]), str(data["cause"])
            except (ValueError, KeyError, TypeError):
                return self.get_logger().warning(f"unreadable /arm/late_rows: {msg.data!r}")
            if self.current is not None and self.current.episode_id == eid:
                self.current.system_events.append({"kind": LATE_ROWS, "cause": cause, "t": data.get("t")})
                self.say(f"episode {eid}: {cause} [{LATE_ROWS}]")

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
            rehearsal = (self.scene_check, self.shadow_start, self.shadow_finish) if self.setup == "rehearsal" else ()
            return (self.reset, self.referee_start, self.referee_finish, self.bridge_start, self.bridge_finish,
                    *recording, *rehearsal)

        def graph_missing(self) -> list[str]:
            """What the graph still lacks before the first episode: services, and topics between
            the other nodes without a publisher or a subscriber (an episode's first measurements
            could be published before anyone listens)."""
            missing = [c.srv_name for c in self.clients_needed() if not c.service_is_ready()]
            for topic in self.connected_topics:
                # Which side this node's view of the graph lacks: the data may flow while the
                # view (rmw's graph cache) still misses an endpoint.
                sides = [side for side, count in (("publisher", self.count_publishers(topic)),
                                                  ("subscriber", self.count_subscribers(topic))) if not count]
                if sides:
                    missing.append(f"{topic} (no {' and no '.join(sides)})")
            if self.settings.support not in ("", "none") and not any(  # the oracle must hear the first legal set
                    i.node_name == "oracle" for i in self.get_subscriptions_info_by_topic("/referee/legal_set")):
                missing.append("/referee/legal_set (the oracle's subscription)")
            return missing

        def graph_ready(self):
            return None if self.graph_missing() else True

        def call(self, client, request):
            return ServiceCall(client, request, self.service_timeout_s)

        # --------------------------------------------------------- procedure
        def evaluation(self):
            try:
                run_dir = resolve_run_dir(self.settings.output_dir)
                instances = plan_instances(self.settings)
                write_plan(run_dir, self.settings, instances)
                self.log = AttemptLog(run_dir, {"run_dir": str(run_dir), "settings": vars(self.settings),
                                                "planned_episodes": len(instances)})
            except PlanError as exc:
                self.get_logger().error(str(exc))
                self.exit_code = EXIT_SETUP
                return
            except OSError as exc:  # an unwritable or full output directory
                self.get_logger().error(f"cannot write the run's records: {exc.strerror or exc} ({exc.filename})")
                self.exit_code = EXIT_SETUP
                return
            self.planned = len(instances)
            try:
                self.assets = task_family(self.settings.task).assets()
            except (OSError, NotImplementedError) as exc:  # identities then compare as unknown, never as equal
                self.get_logger().warning(f"asset revision unknown: {exc}")
            # Until the last episode is recorded, a stop means "interrupted" (run_node reads
            # exit_code before close() runs).
            self.exit_code = EXIT_INTERRUPTED
            self.get_logger().info(f"run {run_dir}: {len(instances)} episodes of {self.settings.system}")
            # Nodes start slowly (the simulator loads its scene) and discovery can take
            # seconds: wait for the whole graph once, then hold every call to service_timeout_s.
            missing = yield Until(self.graph_ready, self.startup_timeout_s)
            if missing is None:
                self.get_logger().error(f"graph not ready after {self.startup_timeout_s:g} s, missing "
                                        f"{', '.join(self.graph_missing())}; episodes will record the failures")
            self.bar = tqdm(total=len(instances), desc="episodes", unit="ep", file=sys.stderr,
                            mininterval=0, dynamic_ncols=False, ncols=120)
            for index, instance in enumerate(instances):
                attempt = yield from self.episode(run_dir, index, instance)
                self.current = None
                try:
                    self.log.record(attempt)
                except OSError as exc:
                    self.stop_on_write_failure(attempt, exc)
                    return
                if attempt.status != "ok":
                    self.say(console_line(attempt.episode_id, attempt.error or "unknown error"))
                try:
                    self.progress()
                except OSError as exc:
                    self.stop_on_write_failure(None, exc)
                    return
            self.bar.close()
            try:
                summary = self.log.write_summary(interrupted=False, attempted_episodes=len(self.log.attempts))
            except OSError as exc:
                self.stop_on_write_failure(None, exc)
                return
            print(f"\nsummary: {run_dir / 'summary.json'}\n{format_table(summary)}", flush=True)
            unscored = sum(1 for a in self.log.attempts if a.status != "ok" or a.scores is None)
            if unscored:
                print(f"{unscored} of {len(self.log.attempts)} episodes were not scored "
                      f"(validity errors above; exit status {EXIT_UNSCORED})", flush=True)
            self.exit_code = EXIT_UNSCORED if unscored else EXIT_OK

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

            out_dir = self.log.episode_dir(eid)
            instance_json = instance.to_json()
            assets = dict(self.assets)  # plus the scene lab_sim compiled for this instance
            sim_start = self.sim_now
            started = True
            task_wall = 0.0
            if self.record:
                # The bag opens before the reset so it holds the episode's tare and first state.
                answer = yield self.call(self.recorder_start, StartEpisode.Request(
                    episode_id=eid, instance_json=instance_json, output_dir=str(out_dir),
                    run_json=run_json(self.settings, instance, assets)))
                started = not failed(answer, "recorder", "recorder start")
            if started:
                answer = yield from self.reset_scene(eid, instance_json)
                what = {"sim": "lab_sim reset", "rehearsal": "lab_sim reset and scene check"}.get(
                    self.setup, "scene set-up")
                started = not failed(answer, self.scene_node, what)
            if started:
                assets["scene_hash"] = answer.scene_hash
                sim_start = answer.sim_time if answer.sim_time > 0 or self.sim_now is None else self.sim_now
                answer = yield self.call(self.referee_start, StartEpisode.Request(
                    episode_id=eid, instance_json=instance_json, output_dir=str(out_dir),
                    run_json=run_json(self.settings, instance, assets)))
                started = not failed(answer, "referee", "referee start")
            if started and self.shadow_start is not None:
                answer = yield self.call(self.shadow_start, StartEpisode.Request(
                    episode_id=eid, instance_json=instance_json, output_dir=str(out_dir),
                    run_json=run_json(self.settings, instance, assets)))
                started = not failed(answer, "shadow_referee", "shadow referee start")
            if started:
                answer = yield ServiceCall(self.bridge_start, StartEpisode.Request(
                    episode_id=eid, instance_json=instance_json, output_dir=str(out_dir),
                    run_json=run_json(self.settings, instance, assets)), self.service_timeout_s + BRIDGE_START_EXTRA_S)
                started = not failed(answer, "policy_bridge", "policy_bridge start")
                if started:
                    try:
                        record_policy_profile(out_dir, answer.message)
                    except OSError as exc:  # a full disk: the episode cannot be recorded as run
                        attempt.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
            if started:
                self.sim_start = sim_start
                self.sim_seen_wall = task_start = time.monotonic()  # the stall watchdog counts from here
                attempt.reason = yield Until(lambda: self.watch(attempt))
                task_wall = time.monotonic() - task_start
                sim_start = self.sim_start
            else:
                attempt.reason = "error"

            # Stop the policy first, then let the referee score: scores are in hand
            # before anything is closed.
            sim_end = self.sim_now
            if "policy_bridge" not in unreachable:
                answer = yield self.call(self.bridge_finish, FinishEpisode.Request(
                    episode_id=eid, reason=attempt.reason, sim_time=sim_end or 0.0))
                if not failed(answer, "policy_bridge", "policy_bridge finish"):
                    try:
                        record_system_usage(out_dir, answer.message)
                    except OSError as exc:
                        attempt.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
            if "referee" not in unreachable:
                answer = yield self.call(self.referee_finish, FinishEpisode.Request(
                    episode_id=eid, reason=attempt.reason, sim_time=sim_end or 0.0))
                if not failed(answer, "referee", "referee finish"):
                    attempt.scores = parse_scores(answer.scores_json)
                    if attempt.scores is None:
                        attempt.fail("referee finish returned no readable scores_json")
            if self.shadow_finish is not None and "shadow_referee" not in unreachable:
                # Its scores are its own records (shadow/scores.json): `labference agreement` compares them.
                answer = yield self.call(self.shadow_finish, FinishEpisode.Request(
                    episode_id=eid, reason=attempt.reason, sim_time=sim_end or 0.0))
                failed(answer, "shadow_referee", "shadow referee finish")
            if self.record and "recorder" not in unreachable:
                answer = yield self.call(self.recorder_finish, FinishEpisode.Request(
                    episode_id=eid, reason=attempt.reason, sim_time=sim_end or 0.0))
                failed(answer, "recorder", "recorder finish")
            # Task time excludes setup (the control protocol): an episode that never started took none.
            total = time.monotonic() - wall0
            attempt.wall_s = task_wall
            attempt.setup_wall_s = total - task_wall
            if sim_start is not None and sim_end is not None:
                attempt.sim_s = max(0.0, sim_end - sim_start)
            return attempt

        def reset_scene(self, eid: str, instance_json: str):
            """The reset's answer. An operator's set-up (or, in a rehearsal, the sensors' view of
            lab_sim's reset) is checked again every SETUP_RETRY_S until the scene matches or
            setup_timeout_s passes; each new refusal is said once."""
            request = ResetEpisode.Request(episode_id=eid, instance_json=instance_json)
            answer = yield self.call(self.reset, request)
            if self.setup == "sim":
                return answer
            check = self.reset if self.setup == "operator" else self.scene_check
            if self.setup == "rehearsal":
                if isinstance(answer, ServiceFailure) or not answer.success:
                    return answer
                reset, answer = answer, (yield self.call(check, request))
            said = ""
            deadline = time.monotonic() + self.setup_timeout_s
            while time.monotonic() < deadline:
                if _reply_lost(answer):
                    # The scene check (the world estimator's /world_estimator/reset, in both
                    # set-ups) only reads the sensors: asking again is safe. Its reply can be
                    # dropped by Fast DDS (docs/pitfalls.md, a reply sent before its writer
                    # matched the client), which must not end the episode.
                    self.get_logger().warning(f"{eid}: {answer}; asking the scene check again")
                    answer = yield self.call(check, request)
                    continue
                if isinstance(answer, ServiceFailure) or answer.success:
                    break
                if answer.message != said:
                    if self.setup == "operator":
                        self.say(f"{eid}: set the scene up as the instance says ({answer.message})")
                    said = answer.message
                yield Until(lambda: None, SETUP_RETRY_S)
                answer = yield self.call(check, request)
            if not isinstance(answer, ServiceFailure) and not answer.success:
                answer.message = f"not set up within {self.setup_timeout_s:g} s: {answer.message}"
            if self.setup == "rehearsal" and not isinstance(answer, ServiceFailure) and answer.success:
                return reset  # lab_sim's answer: the scene's hash and its sim time
            return answer

        def watch(self, attempt: Attempt):
            """The finish reason once the episode should end, else None."""
            eid = attempt.episode_id
            if self.setup == "rehearsal":
                # Both referees score the episode to its end: it ends when both saw it complete, or
                # REHEARSAL_COMPLETION_GRACE_S after the first did (the other disagrees: on record).
                if eid in self.complete and eid in self.shadow_complete:
                    return "completed"
                if (eid in self.complete or eid in self.shadow_complete) and self.sim_now is not None:
                    first = self.first_complete_t.setdefault(eid, self.sim_now)
                    if self.sim_now - first >= REHEARSAL_COMPLETION_GRACE_S:
                        return "completed"
            elif eid in self.complete:
                return "completed"
            if eid in self.hardware_faults:
                attempt.fail(f"hardware_fault: {self.hardware_faults[eid]}")
                return "error"
            state, why = self.bridge.get(eid, ("running", ""))
            if state == "done":
                return "policy_stop"
            if state == "error":
                attempt.fail(f"policy_bridge reported an error: {why}")
                return "error"
            if self.sim_now is not None:
                if self.sim_start is None or self.sim_now < self.sim_start:
                    self.sim_start = self.sim_now  # no clock at reset, or a sim that restarts its clock
                if self.sim_now - self.sim_start >= self.settings.deadline_s:
                    return "deadline"
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

        def stop_on_write_failure(self, attempt, exc: OSError) -> None:
            """The run's own records cannot be written (a full disk): no more episodes. What
            is on disk stays parseable (whole lines, atomic JSON); the console says why."""
            if attempt is not None:
                attempt.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
                self.say(console_line(attempt.episode_id, attempt.error))
            if self.bar is not None:
                self.bar.close()
            print(f"run stopped after {len(self.log.attempts)} of {self.planned} episodes: cannot write "
                  f"{exc.filename}: {exc.strerror or exc}", flush=True)
            self.write_final_summary()
            self.exit_code = EXIT_INTERRUPTED

        def write_final_summary(self) -> None:
            """summary.json of an interrupted run; where it cannot be written (a full disk),
            the previous one is removed, so that no stale summary says the run went on."""
            try:
                self.log.write_summary(interrupted=True, attempted_episodes=len(self.log.attempts))
            except OSError as exc:
                stale = self.log.run_dir / "summary.json"
                stale.unlink(missing_ok=True)
                print(f"cannot write {exc.filename}: {exc.strerror or exc}; {stale} removed (it described "
                      f"the run before it stopped)", flush=True)

        def say(self, line: str) -> None:
            """A console line of its own, also while the progress bar is drawn."""
            tqdm.write(line, file=sys.stdout)
            sys.stdout.flush()

        def progress(self):
            s = self.log.write_summary(interrupted=False, attempted_episodes=len(self.log.attempts))["overall"]
            self.bar.set_postfix_str(f"selection {format_rate(s['selection'])}, "
                                     f"completion {format_rate(s['completion'])}, errors {s['errors']}",
                                     refresh=False)
            self.bar.update(1)

        # ------------------------------------------------------------ ending
        def destroy_node(self):
            destroy_reader(self, "clock_reader")
            return super().destroy_node()

        def close(self):
            """Called on SIGINT/SIGTERM too: the episode in flight becomes an ERROR row."""
            if self.script.finished or self.log is None:
                return
            try:
                if self.current is not None:
                    why = _stop_reason()
                    self.current.fail(f"{why}: episode runner stopped during the episode" if why
                                      else "episode runner stopped during the episode")
                    self.current.reason = self.current.reason or "aborted"
                    self.say(console_line(self.current.episode_id, self.current.error))
                    self.log.record(self.current)
            except OSError as exc:
                print(f"cannot write {exc.filename}: {exc.strerror or exc}", flush=True)
            self.write_final_summary()
            if self.bar is not None:
                self.bar.close()
            self.get_logger().error(f"stopped after {len(self.log.attempts)} of {self.planned} episodes")
            self.exit_code = EXIT_INTERRUPTED

    return EpisodeRunner()


def main(args=None) -> int:
    return run_node(make_node, args)


if __name__ == "__main__":
    sys.exit(main())
