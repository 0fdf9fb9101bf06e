"""policy_bridge: the policy boundary. Builds the whitelist observation from
registered topics, publishes its delivery receipt, calls the tested system,
checks the chunk against the ActionSpec and turns accepted rows into
JointTrajectory + GripperCommand messages, one control interval each.

Sync mode owns no physics but asks lab_sim to advance over commanded control
intervals only (/lab_sim/advance, command-stamped), so physics pauses during
inference. Each row still goes out as its own command stamped at its boundary,
as a controller would receive it, but one advance runs up to rows_per_advance
of them (lab_sim holds a command until sim time reaches its stamp), and while
it runs the next rows and their advance are already sent (lab_sim holds an
advance until the one before ends), so no round trip sits between two rows and
only one per rows_per_advance is paid at all. The loop is a state
machine on a timer; inference runs in a worker thread and every service call
is call_async, so the single-threaded executor never blocks.
The episode's protocol (evidence versions, stop rules, observation numbering
and history, chunk checks, row queue and invalidation, report binding) is
core.episode_loop.EpisodeLoop, the same class the Oracle's continuations run;
this node only moves its inputs and outputs over ROS.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from builtin_interfaces.msg import Duration, Time
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from labference.msg import (ActionChunk, DecisionOpportunity, DeliveryReceipt, GripperCommand, Intervention,
                            Operation, WorldState)
from labference.srv import Advance, FinishEpisode, ReportOperation, SetPause, StartEpisode
from labference_ros.core.action_conversion import identity
from labference_ros.core.episode_loop import STOP_HOLD_S, EpisodeLoop
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.linefile import LineFile
from labference_ros.cdr_views import WorldStateDecoder, header_stamp_s
from labference_ros.msgconv import s_to_stamp, stamp_to_s
from labference_ros.nodes.advance_protocol import ADVANCE_RUNNING
from labference_ros.nodes.matching import await_matched, command_qos, image_qos
from labference_ros.nodes.run_dir import outside_run_dir
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
from labference_ros.oracle.handoff import SupportHandoff
from labference_ros.perception.camera import world_camera_calibration
from labference_ros.policies import EvaluationValidityError, make
from labference_ros.skills.safety_modes import safety_check, safety_record
from labference_ros.tasks import family as task_family

EPS = 1e-6
# How long finish_episode waits for a model request in flight; below the episode
# runner's service_timeout_s (30 s by default), so the finish itself never times out.
FINISH_WAIT_S = 20.0
# The control loop moves on events: a lab_sim reply, a message the observation waits
# for, the referee's echo. Timers only poll what cannot call back into the executor:
# a system's answer from the inference thread (fast, while one is awaited) and the
# timeouts (slow).
INFERENCE_POLL_S = 0.002
# Sync mode: how often an observation still missing a sampled input looks again (they
# are published before lab_sim's reply, so it rarely has to).
INPUT_POLL_S = 0.001
TIMEOUT_POLL_S = 0.05
# An episode's first advance (zero duration: lab_sim publishes the boundary's state) is
# asked again after this long without a reply. The server drops a reply when its writer
# has not yet matched this client's reader (discovery on a loaded machine); a second
# zero advance changes nothing, so asking again is safe.
PRIME_RESEND_S = 1.0
MAX_STEPS_PER_TICK = 16
# Sync mode: the rows of a chunk one advance runs. Each advance costs a service round
# trip and its answer (the boundary's joint and world state); the rows sent for the
# advance that runs and the one asked ahead run even when an operator pauses meanwhile
# (the arm then decelerates from the last), so this also bounds how late a pause acts:
# at most 10 rows, 0.2 s of sim time at 50 Hz.
ROWS_PER_ADVANCE = 5
# The rows of two advances must fit lab_sim's command queues and its memory of commanded
# boundaries (matching.COMMAND_QUEUE_DEPTH, lab_sim.COMMANDS_KEPT: 128 each).
MAX_ROWS_PER_ADVANCE = 50


# Deliveries and their echoes are latched: a receipt published before the peer's
# subscription matched (discovery can take seconds) still arrives.
RECEIPT_QOS = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def system_params(v: dict) -> dict:
    """The tested system's parameters: system_params_json, plus the agent's
    server and model when given as their own launch arguments."""
    params = json.loads(v["system_params_json"] or "{}")
    for key in ("agent_url", "agent_model"):
        if v.get(key):
            params[key] = v[key]
    return params


class PolicyBridge(Node):
    def __init__(self):
        super().__init__("policy_bridge")
        p = self.declare_parameters("", [
            ("system", "display_reader"), ("system_params_json", "{}"), ("step_mode", "sync"),
            ("camera_rate", 10.0), ("control_rate_hz", 50.0), ("max_chunk_length", 50),
            ("controller", "panda_arm_controller"), ("wait_for_referee_receipt", True),
            ("observation_timeout_s", 30.0), ("stop_hold_s", STOP_HOLD_S), ("episode_deadline_s", 0.0),
            ("agent_url", ""), ("agent_model", ""), ("support", "none"),
            ("task", "feedback_weighing"), ("match_timeout_s", 5.0), ("safety", "none"),
            ("image_reliability", "reliable"), ("report_mirror", ""), ("rows_per_advance", ROWS_PER_ADVANCE)])
        v = {x.name: x.value for x in p}
        self.v = v
        self.rows_per_advance = int(v["rows_per_advance"])
        if not 1 <= self.rows_per_advance <= MAX_ROWS_PER_ADVANCE:
            raise ValueError(f"rows_per_advance must be 1 to {MAX_ROWS_PER_ADVANCE}, got {self.rows_per_advance}")
        self.family = task_family(str(v["task"]))
        self.scene_changes_on_its_own = bool(self.family.environment_profile())
        self.cameras = self.family.cameras  # what the tested system sees
        if v["step_mode"] not in ("sync", "realtime"):
            raise ValueError(f"step_mode must be sync or realtime, got {v['step_mode']!r}")
        self.spec = reference_joint_spec(float(v["control_rate_hz"]), int(v["max_chunk_length"]))
        self.system = make(v["system"], spec=self.spec, task=self.family.name, **system_params(v))
        # A system answering in its own convention (a profile's ActionSpec) is
        # converted here, in one place, into the reference rows executed below.
        self.conversion = getattr(self.system, "action_conversion", None) or identity(self.spec)
        if self.conversion.reference != self.spec:
            raise ValueError(f"{v['system']}: its action conversion targets another reference spec")
        # safety:=franka: every accepted chunk must also keep the Panda's joint velocity and
        # acceleration limits and the cell's workspace box (core.safety), or the arm holds.
        self.safety = str(v["safety"])
        self.envelope = safety_check(self.safety)
        # Full-rollout Oracle support: what the oracle node sends, handed to the system at each handoff.
        self.support = SupportHandoff(v["support"], self.system)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inference")
        # Newest message per channel, as its serialized bytes: stamps are read from them
        # and a message is decoded only when an observation uses it (most never are).
        self.latest: dict[str, bytes] = {}
        self.world_decoder = WorldStateDecoder()
        self.echoes: dict[str, DeliveryReceipt] = {}  # referee receipts by observation id
        self.ep: dict | None = None

        qos = QoSProfile(depth=10)
        img_qos = image_qos(str(v["image_reliability"]))
        self.inputs = {}  # topic -> subscription, awaited at each episode's start
        # Sync mode reads joints and (privileged) world state only at boundaries, from
        # lab_sim's answer to each advance (the measurement it published there), and frames
        # only at observations: the frames' subscriptions sit on a node no executor spins and
        # are taken when used. Realtime keeps callbacks: each joint state moves its clock.
        self.sampled: dict[str, SampledInput] = {}  # key of self.latest -> input
        self.input_reader = None
        if v["step_mode"] == "sync":
            self.input_reader = reader_node(self)

        def subscribe(msg_type, topic, callback, profile, raw=False):
            self.inputs[topic] = self.create_subscription(msg_type, topic, callback, profile, raw=raw)

        def stream(key, msg_type, topic, profile):
            if self.input_reader is None:
                subscribe(msg_type, topic, lambda m: self._keep(key, m), profile, raw=True)
                return
            self.sampled[key] = SampledInput(self.input_reader, msg_type, topic, profile)
            self.inputs[topic] = self.sampled[key].subscription

        if self.input_reader is None:
            stream("joints", JointState, "/joint_states", qos)
        for cam in self.cameras:
            stream(f"image:{cam}", Image, f"/cameras/{cam}/image_raw", img_qos)
        subscribe(DecisionOpportunity, "/referee/opportunities", self.on_opportunity, QoSProfile(depth=50))
        subscribe(DeliveryReceipt, "/referee/receipts", self.on_echo, RECEIPT_QOS)
        if self.support.awaited:
            subscribe(Intervention, "/oracle/interventions", self._then_tick(self.support.on_intervention),
                      RECEIPT_QOS)
            subscribe(DeliveryReceipt, "/oracle/receipts", self._then_tick(self.support.on_oracle_receipt),
                      RECEIPT_QOS)
        if self.system.privileged and self.input_reader is None:  # evaluator state reaches privileged systems only
            stream("world", WorldState, "/evaluator/world_state", QoSProfile(depth=10))
        self.pub_receipt = self.create_publisher(DeliveryReceipt, "/policy/receipts", RECEIPT_QOS)
        self.pub_chunk = self.create_publisher(ActionChunk, "/policy/action_chunks", QoSProfile(depth=50))
        self.pub_traj = self.create_publisher(JointTrajectory, f"/{v['controller']}/joint_trajectory", command_qos())
        self.pub_grip = self.create_publisher(GripperCommand, "/panda_gripper/command", command_qos())
        self.pub_status = self.create_publisher(
            String, "/policy_bridge/status", QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.advance = self.create_client(Advance, "/lab_sim/advance")
        # Systems with an explicit report track (e.g. the agent's commitments).
        self.report = self.create_client(ReportOperation, "/referee/report_operation")
        # A second referee scoring the same episode (the rehearsal's shadow) gets every report too.
        mirror = str(v["report_mirror"])
        self.report_mirror = self.create_client(ReportOperation, mirror) if mirror else None
        self.create_service(StartEpisode, "/policy_bridge/start_episode", self.on_start)
        self.create_service(FinishEpisode, "/policy_bridge/finish_episode", self.on_finish)
        self.create_service(SetPause, "/policy_bridge/pause", self.on_pause)
        self._ticking = False
        self._tick_again = False
        self.create_timer(TIMEOUT_POLL_S, self.tick)
        self.inference_poll = self.create_timer(INFERENCE_POLL_S, self.tick)
        self.inference_poll.cancel()  # runs only while a system's answer is awaited
        self.input_poll = self.create_timer(INPUT_POLL_S, self.tick)
        self.input_poll.cancel()  # runs only while an observation waits for a sampled input

    # inputs -------------------------------------------------------------------
    def _keep(self, key, data: bytes):
        self.latest[key] = data
        if self.ep is not None and self.ep["state"] in ("observe", "execute"):
            self.tick()  # the observation may be complete now (realtime: the clock moved)

    def _then_tick(self, callback):
        def handle(msg):
            callback(msg)
            self.tick()
        return handle

    def on_echo(self, msg: DeliveryReceipt):
        if msg.kind == "observation":
            self.echoes[msg.payload_id] = msg
            self._note_evidence(int(msg.evidence_version), msg.payload_id)
        elif msg.kind == "intervention":
            self.support.on_referee_receipt(msg)
        self.tick()

    def on_opportunity(self, msg: DecisionOpportunity):
        self._note_evidence(int(msg.evidence_version), msg.delivered_observation_id)

    def _note_evidence(self, version: int, observation_id: str):
        if self.ep is not None:
            self.ep["loop"].note_evidence(version, observation_id)

    # episode lifecycle --------------------------------------------------------
    def on_start(self, request, response):
        refused = outside_run_dir(request.output_dir)
        if refused:
            response.success, response.message = False, f"cannot start: {refused}"
            return response
        try:
            instance = self.family.instance_from_json(request.instance_json)
            self.system.reset(request.episode_id, instance.policy_seed)
        except EvaluationValidityError as exc:
            response.success, response.message = False, f"policy session reset failed: {exc}"
            self._status(request.episode_id, "error", str(exc))
            return response
        except Exception as exc:  # a broken instance is reported, never crashes the node
            response.success, response.message = False, f"cannot start: {exc}"
            return response
        out = pathlib.Path(request.output_dir) if request.output_dir else None
        log = None
        if out is not None:
            try:
                out.mkdir(parents=True, exist_ok=True)
                self.system.set_output_dir(out)
                log = LineFile(out / "policy_actions.jsonl", fsync=False)
            except OSError as exc:
                response.success = False
                response.message = f"cannot write policy_actions.jsonl in {out}: {exc.strerror or exc}"
                self._status(request.episode_id, "error", response.message)
                return response
        # The first frames after the reset are published once: an unmatched camera
        # or joint subscription would leave the first observation incomplete.
        await_matched(self, self.inputs, float(self.v["match_timeout_s"]))
        self._close_log()
        # Nothing of the previous episode may reach this one (in realtime the newest joint
        # state also sets the bridge's clock: one from before the reset would run it ahead).
        self.latest.clear()
        for source in self.sampled.values():
            source.newest()  # dropped, as a callback's message before this start is
        self.echoes.clear()
        loop = EpisodeLoop(self.system, self.conversion, episode_id=request.episode_id, instance=instance,
                           stop_hold_s=float(self.v["stop_hold_s"]),
                           deadline_s=float(self.v["episode_deadline_s"]), record=self._record,
                           wall_clock=time.time, envelope=self.envelope)
        self.ep = {"id": request.episode_id, "instance": instance, "t": 0.0, "state": "prime", "loop": loop,
                   "log": log, "since": time.monotonic(), "advance_futures": []}
        self._status(request.episode_id, "running", "")
        self.support.start_episode(request.episode_id)
        response.success = True
        response.message = json.dumps({"policy": {**self.system.profile(), **safety_record(self.safety)},
                                       "intervention": self.support.profile()})
        self.inference_poll.cancel()  # nothing of an earlier episode is awaited any more
        self.input_poll.cancel()
        self.tick()  # prime: the first advance goes out now
        return response

    def on_finish(self, request, response):
        if self.ep is None or request.episode_id != self.ep["id"]:
            response.success, response.message = False, "no such episode"
            return response
        self._let_inference_finish(self.ep, request.reason or "finished")
        self._end("done", request.reason or "finished")
        response.success = True
        # The system's own episode summary (the agent's usage) for the runner's run.json.
        response.message = json.dumps({"system_summary": self.ep.get("system_summary")})
        return response

    def on_pause(self, request, response):
        """The operator stops the arm (pause) or lets the system go on (resume)."""
        ep = self.ep
        if ep is None or request.episode_id != ep["id"] or ep["state"] in ("done", "error"):
            response.success, response.message = False, f"no running episode {request.episode_id!r}"
            return response
        loop = ep["loop"]
        if request.pause and not ep.get("paused"):
            ep["paused"] = True
            # The rows of the advances asked for and not answered yet (the one running, and
            # the next one sent ahead): they run, then the arm decelerates from the last.
            ahead = ep.get("ahead")
            in_flight = list(ep.get("in_flight", [])) + (ahead["rows"] if ahead else [])
            stop = loop.pause(ep["t"], request.reason)
            if stop is not None:  # replaces the trajectory: the arm decelerates to rest
                if ep["state"] == "advancing":
                    stop = np.vstack([*(row[None, :] for row in in_flight if row is not None), stop])
                self._send_rows(ep, stop, self.spec.hold_interval_s)
        elif not request.pause and ep.get("paused"):
            ep["paused"] = False
            loop.resume(ep["t"], request.reason)
        response.success = True
        response.message = "paused" if ep.get("paused") else "running"
        self.tick()  # resumed: go on now, not at the next timer or input
        return response

    def _let_inference_finish(self, ep, reason: str):
        """A model request in flight when the runner ends the episode is still
        charged: stop new dispatches, then wait for it (bounded, below the
        runner's service timeout) before the system's summary is taken."""
        fut = ep.get("inference")
        if fut is None or fut.done():
            return
        self.system.stop_dispatch(reason)
        try:
            fut.result(timeout=FINISH_WAIT_S)
        except Exception:  # timeout or the system's own error: the episode is ending either way
            pass

    def _end(self, state: str, reason: str):
        ep = self.ep
        if ep is None or ep["state"] in ("done", "error"):
            return
        ep["state"] = state
        self.inference_poll.cancel()
        self.input_poll.cancel()
        self._drop_pending_advances(ep, ahead_too=True)  # an ended episode awaits no answer
        summary = self.system.end_episode(reason)
        if summary is not None:
            ep["system_summary"] = summary
            self._record({"record": "system_summary", **summary})
        self._record({"record": "end", "state": state, "reason": reason, "t": ep["t"]})
        self._status(ep["id"], state, reason)
        self._close_log()

    def _status(self, episode_id, state, reason):
        self.pub_status.publish(String(data=json.dumps(
            {"episode_id": episode_id, "state": state, "reason": reason})))

    def _record(self, entry: dict):
        log = self.ep and self.ep.get("log")
        if log:
            try:
                log.write_line(json.dumps({"episode_id": self.ep["id"], **entry}))
            except OSError as exc:  # e.g. a full disk: this log stops; tick() ends the episode as invalid
                self.ep["log_error"] = exc
                self._close_log()

    def _close_log(self):
        if self.ep and self.ep.get("log"):
            self.ep["log"].close()
            self.ep["log"] = None

    # the control loop ---------------------------------------------------------
    def tick(self):
        """Run the episode's state machine as far as it can go now. Called from timers,
        reply callbacks and input callbacks; a call made while it runs (a reply that was
        already there) makes it go round once more instead of nesting."""
        if self._ticking:
            self._tick_again = True
            return
        self._ticking = True
        try:
            for _ in range(MAX_STEPS_PER_TICK):
                self._tick_again = False
                ep = self.ep
                state = ep["state"] if ep is not None else None
                self._step()
                if not self._tick_again and (self.ep is not ep or ep is None or ep["state"] == state):
                    break  # waiting for something
        finally:
            self._ticking = False

    def _step(self):
        ep = self.ep
        if ep is None or ep["state"] in ("done", "error"):
            return
        if ep.get("log_error") is not None:
            exc = ep["log_error"]
            self._end("error", f"evaluation invalid: cannot write policy_actions.jsonl: {exc.strerror or exc}")
            return
        try:
            getattr(self, f"_state_{ep['state']}")(ep)
        except EvaluationValidityError as exc:
            self._end("error", f"evaluation invalid: {exc}")
        except Exception as exc:  # the node reports and stays up for the next episode
            self.get_logger().error(f"policy bridge failed: {exc!r}")
            self._end("error", f"{type(exc).__name__}: {exc}")

    def _lab_sim_not_up(self, ep) -> bool:
        """Asked until lab_sim first answers in this episode (a graph query per row costs);
        after that, a lab_sim that leaves shows as an advance without a reply."""
        return not ep.get("advance_answered") and not self.advance.service_is_ready()

    def _advance(self, ep, duration, then="observe"):
        """Ask lab_sim to run ``duration`` from the current boundary with no command (a
        prime, a paused hold)."""
        if self.v["step_mode"] != "sync":
            ep["state"] = then
            return
        if self._lab_sim_not_up(ep):
            return  # try again next tick
        self._start_advance(ep, self._advance_request(ep["t"], duration, [], []), [ep["loop"].setpoint], then)

    def _start_advance(self, ep, request: Advance.Request, rows: list, then: str) -> None:
        """Send ``request``, the advance that runs ``rows`` (their setpoints: what a pause
        lets run), and wait for its answer."""
        ep["state"], ep["then"], ep["advance_request"] = "advancing", then, request
        ep["in_flight"] = rows
        ep["advance_sent"] = time.monotonic()
        ep["advance_futures"] = []
        self._send_advance(ep)

    def _advance_request(self, t: float, duration: float, arm_stamps: list[float],
                         gripper_stamps: list[float]) -> Advance.Request:
        """The advance over ``duration`` from boundary t that waits for the arm and gripper
        commands stamped at the given boundaries (t itself among them or not)."""
        req = Advance.Request(duration_s=float(duration), include_world_state=self.system.privileged)
        s_to_stamp(t, req.command_stamp)
        req.arm_command_stamps = [s_to_stamp(x, Time()) for x in arm_stamps]
        req.gripper_command_stamps = [s_to_stamp(x, Time()) for x in gripper_stamps]
        return req

    def _send_segment(self, ep, t0: float):
        """The chunk's next rows (at most rows_per_advance), each sent as the commands of
        its own interval from boundary t0 on; the advance that runs them and the setpoint
        after each row, or None when the queue is done (observe next)."""
        loop = ep["loop"]
        dt = self.spec.hold_interval_s
        arm_stamps, gripper_stamps, setpoints = [], [], []
        while len(setpoints) < self.rows_per_advance:
            t = t0 + len(setpoints) * dt
            command = loop.next_command(t)
            if command is None:
                break
            arm, gripper = self._send_command(ep, command, t)
            if arm:
                arm_stamps.append(t)
            if gripper:
                gripper_stamps.append(t)
            setpoints.append(loop.setpoint)
        if not setpoints:
            return None
        return self._advance_request(t0, len(setpoints) * dt, arm_stamps, gripper_stamps), setpoints

    def _send_advance(self, ep):
        ep["advance_futures"].append(self._call_advance(ep["advance_request"]))
        ep["advance_last_sent"] = time.monotonic()

    def _call_advance(self, request: Advance.Request):
        future = self.advance.call_async(request)
        future.add_done_callback(lambda _reply: self.tick())
        return future

    def _drop_pending_advances(self, ep, ahead_too: bool = False):
        """Forget the current advance's requests not answered (a prime asked again), and
        with ahead_too the one sent ahead."""
        ahead = ep.pop("ahead", None) if ahead_too else None
        for future in ep["advance_futures"] + (ahead["futures"] if ahead else []):
            if not future.done():
                self.advance.remove_pending_request(future)
        ep["advance_futures"] = []

    def _state_prime(self, ep):
        # lab_sim publishes the state at a boundary when asked to advance by zero.
        self._advance(ep, 0.0)

    def _state_advancing(self, ep):
        """Waits for lab_sim's answer. A prime (zero duration) still unanswered after
        PRIME_RESEND_S is asked again with the earlier requests kept: whichever succeeds
        first counts, and a refusal because an earlier one still runs is no answer."""
        is_prime = ep["advance_request"].duration_s == 0.0
        answers = [f.result() for f in ep["advance_futures"] if f.done()]
        if not answers and "ahead" not in ep:
            self._send_ahead(ep)
        if is_prime:
            answers = [a for a in answers if a is None or a.message != ADVANCE_RUNNING]
        if not answers:
            now = time.monotonic()
            # A reply that never comes (lab_sim gone, a lost response) is an
            # evaluation-validity event, not a silent stall of the episode.
            if now - ep["advance_sent"] > float(self.v["observation_timeout_s"]):
                self._drop_pending_advances(ep)
                raise EvaluationValidityError("lab_sim advance got no reply")
            if is_prime and now - ep["advance_last_sent"] >= PRIME_RESEND_S:
                self.get_logger().warning(
                    f"the first advance of episode {ep['id']} has no answer after {PRIME_RESEND_S} s: asking again")
                self._send_advance(ep)
            return
        self._drop_pending_advances(ep)
        res = next((a for a in answers if a is not None and a.success), answers[0])
        if res is None or not res.success:
            raise EvaluationValidityError(f"lab_sim advance failed: {getattr(res, 'message', 'no reply')}")
        ep["t"], ep["state"], ep["since"] = res.sim_time, ep["then"], time.monotonic()
        ep["advance_answered"] = True
        self._keep_boundary_state(res)
        ahead = ep.pop("ahead", None)
        if ahead is not None:  # the next rows' advance, asked while this one ran
            ep["state"], ep["then"] = "advancing", "execute"
            ep["advance_request"], ep["advance_futures"] = ahead["request"], ahead["futures"]
            ep["advance_sent"] = ep["advance_last_sent"] = ahead["sent"]
            ep["in_flight"] = ahead["rows"]
            self._tick_again = True  # and the rows after them go out now

    def _keep_boundary_state(self, answer: Advance.Response) -> None:
        """The joint and (privileged) world state lab_sim measured at the boundary, serialized
        as the topics would deliver them."""
        if answer.joint_state.name:  # empty while lab_sim has measured nothing since its reset
            self.latest["joints"] = serialize_message(answer.joint_state)
        if len(answer.world_state):  # asked for by privileged systems only
            self.latest["world"] = answer.world_state.tobytes()

    def _send_ahead(self, ep) -> None:
        """While an advance's rows run, send the next rows and ask for their advance, from
        the boundary where this one ends. Only between rows of a chunk: not after a prime, a
        pause or the chunk's last row (the observation after it waits for the answer)."""
        ep["ahead"] = None  # asked once per advance
        if self.v["step_mode"] != "sync" or ep["then"] != "execute" or ep.get("paused"):
            return
        segment = self._send_segment(ep, ep["t"] + ep["advance_request"].duration_s)
        if segment is None:
            return
        request, rows = segment
        ep["ahead"] = {"request": request, "futures": [self._call_advance(request)], "sent": time.monotonic(),
                       "rows": rows}

    def _stamp(self, key) -> float | None:
        source = self.sampled.get(key)
        if source is not None:
            data = source.newest()
            if data is not None:
                self.latest[key] = data
        data = self.latest.get(key)
        return header_stamp_s(data) if data is not None else None

    def _current_time(self, ep) -> float:
        if self.v["step_mode"] == "sync":
            return ep["t"]
        t = self._stamp("joints")
        return t if t is not None else 0.0

    def _fresh(self, ep, t) -> bool:
        """Joint state at t, each camera's newest frame at or after the last
        camera tick, and (privileged) world state at t."""
        joints_t = self._stamp("joints")
        if joints_t is None or abs(joints_t - t) > EPS:
            return False
        if not self._frames_of_the_last_tick(t):
            return False
        if self.system.privileged:
            world_t = self._stamp("world")
            if world_t is None or abs(world_t - t) > EPS:
                return False
        return True

    def _frames_of_the_last_tick(self, t) -> bool:
        """Each camera's newest frame is from the last camera tick at or before t, or later."""
        rate = float(self.v["camera_rate"])
        tick = math.floor(t * rate + EPS) / rate
        for cam in self.cameras:
            frame_t = self._stamp(f"image:{cam}")
            if frame_t is None or frame_t < tick - EPS:
                return False
        return True

    def _have_every_channel(self) -> bool:
        """Realtime mode: at least one message on every channel the observation needs."""
        needed = ["joints", *(f"image:{c}" for c in self.cameras)] + (["world"] if self.system.privileged else [])
        return all(k in self.latest for k in needed)

    def _state_observe(self, ep):
        if ep.get("paused"):  # nothing is asked of the system until the operator resumes
            self.input_poll.cancel()
            ep["state"] = "execute"
            return
        t = self._current_time(ep)
        if self.v["step_mode"] == "sync" and not self._fresh(ep, t):
            if time.monotonic() - ep["since"] > float(self.v["observation_timeout_s"]):
                raise EvaluationValidityError(f"no complete observation at sim time {t:.3f}")
            if self.sampled:
                self.input_poll.reset()  # nothing calls back when a sampled input arrives
            return
        self.input_poll.cancel()
        if self.v["step_mode"] == "realtime":
            if not self._have_every_channel():
                return
            # A scene that changes on its own (an occluder) does so at a camera tick, and the
            # simulator publishes that tick's frames just after its joint state: wait for
            # them, so that no observation from the change on carries an older frame.
            if self.scene_changes_on_its_own and not self._frames_of_the_last_tick(t):
                return
            ep["t"] = t  # realtime: the boundary is wherever the simulator has got to

        loop = ep["loop"]
        stop = loop.stop_reason(t)
        if stop is not None:
            self._end("done", stop)
            return
        images, stamps = {}, {}
        for cam in self.cameras:
            m = deserialize_message(self.latest[f"image:{cam}"], Image)
            images[cam] = np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width, 3)
            stamps[cam] = stamp_to_s(m.header.stamp)
        js = deserialize_message(self.latest["joints"], JointState)
        # What a lab tells its systems: the world camera's calibration from the cell
        # description (mount) and the delivered image (size), never from the simulator.
        front = images["front"]
        calib = {"front": world_camera_calibration("front", front.shape[0], front.shape[1],
                                                   self.family.cell_description()).to_dict()}
        obs = loop.observe(t, images, stamps, dict(zip(js.name, js.position)), calib)
        msg = DeliveryReceipt(episode_id=ep["id"], receipt_id=f"{obs.observation_id}:r",
                              kind="observation", payload_id=obs.observation_id,
                              opportunity_id=-1, evidence_version=loop.obs_ev, status="delivered",
                              detail_json=json.dumps(loop.receipt()))
        s_to_stamp(t, msg.header.stamp)
        self.pub_receipt.publish(msg)
        ep["state"] = "echo" if self.v["wait_for_referee_receipt"] else "infer"
        ep["since"] = time.monotonic()

    def _state_echo(self, ep):
        # In sync mode the referee must have the delivery before physics moves.
        loop = ep["loop"]
        echo = self.echoes.get(loop.obs_id)
        if echo is None:
            if time.monotonic() - ep["since"] > float(self.v["observation_timeout_s"]):
                raise EvaluationValidityError("the referee never acknowledged the delivery")
            return
        loop.acknowledged(int(echo.evidence_version))
        if self.support.awaited and json.loads(echo.detail_json or "{}").get("opened", False):
            self.support.expect(int(echo.opportunity_id))
            ep["state"], ep["since"] = "support", time.monotonic()
        else:
            ep["state"] = "infer"

    def _state_support(self, ep):
        """A handoff opened an opportunity: the oracle answers for each supported
        site, the referee scope-checks what the bridge hands over, and only then
        does the system see the support and act (sync mode: physics waits)."""
        for receipt in self.support.ready_to_forward():
            msg = DeliveryReceipt(episode_id=ep["id"], receipt_id=receipt["receipt_id"], kind="intervention",
                                  payload_id=receipt["payload_id"], opportunity_id=receipt["opportunity_id"],
                                  evidence_version=receipt["evidence_version"], status="delivered",
                                  substituted_output_json=json.dumps(receipt["intervention"]["payload"]),
                                  detail_json=json.dumps({"intervention": receipt["intervention"]}))
            s_to_stamp(ep["t"], msg.header.stamp)
            self.pub_receipt.publish(msg)
        settled = self.support.settled()
        for entry in self.support.drain_log():
            self._record({"record": "support", "t": ep["t"], **entry})
        if settled:
            ep["state"] = "infer"
        elif time.monotonic() - ep["since"] > float(self.v["observation_timeout_s"]):
            # A support that never arrives is a transport fault: the run is not valid.
            raise EvaluationValidityError(f"oracle support never settled: {self.support.waiting_for()}")

    def _state_infer(self, ep):
        loop = ep["loop"]
        if ep.get("inference") is None:
            ev = self._evaluator_view(ep) if self.system.privileged else None
            ep["wall0"] = time.perf_counter()
            ep["inference"] = self.pool.submit(self.system.act, loop.obs, ev)
            self.inference_poll.reset()
            return
        fut = ep["inference"]
        if not fut.done():
            return
        self.inference_poll.cancel()
        ep["inference"] = None
        wall = time.perf_counter() - ep["wall0"]
        chunk = fut.result()  # EvaluationValidityError propagates to tick()
        for report in loop.reports(ep["t"], self.v["system"]):
            op = report.operation
            request = ReportOperation.Request(
                episode_id=ep["id"], opportunity_id=report.opportunity_id,
                evidence_version=report.evidence_version,
                operation=Operation(type=op["type"], object=op["object"], destination=op["destination"]),
                source=report.source)
            self.report.call_async(request)
            if self.report_mirror is not None:
                self.report_mirror.call_async(request)
        for entry in self.support.outputs_after_act():
            self._record({"record": "support_outcome", "t": ep["t"], **entry})
        verdict = loop.take_chunk(chunk, ep["t"], wall)
        if ep.get("paused"):  # answered while the operator paused: nothing of it runs
            loop.drop_queue(ep["t"], "chunk answered during the pause")
        self._publish_chunk(ep, verdict)
        if not verdict.accepted:
            self.get_logger().warning(f"chunk {loop.chunk_id} {verdict.status}: {'; '.join(verdict.reasons)}; "
                                      "holding")
        ep["state"] = "execute"

    def _evaluator_view(self, ep):
        return self.family.evaluator_view(ep["instance"], self.world_decoder(self.latest["world"]))

    def _publish_chunk(self, ep, verdict):
        loop = ep["loop"]
        req = verdict.requested
        msg = ActionChunk(episode_id=ep["id"], chunk_id=loop.chunk_id, observation_id=loop.obs_id,
                          evidence_version=loop.obs_ev, representation=self.spec.representation,
                          mode=self.spec.mode, frame=self.spec.frame,
                          control_frequency_hz=self.spec.control_frequency_hz)
        if req is not None and req.ndim == 2:
            msg.length, msg.dim = req.shape
            msg.data = [float(x) for x in req.reshape(-1)]
        s_to_stamp(ep["t"], msg.header.stamp)
        self.pub_chunk.publish(msg)

    def _state_execute(self, ep):
        loop = ep["loop"]
        if ep.get("paused"):
            # Nothing moves and the system is not asked; sim time goes on in hold intervals.
            stop = loop.stop_reason(self._current_time(ep))
            if stop is not None:
                self._end("done", stop)
            elif self.v["step_mode"] == "sync":
                self._advance(ep, self.spec.hold_interval_s, then="execute")
            return
        if self.v["step_mode"] == "realtime":
            if loop.queue and loop.latest_ev <= loop.chunk_ev:
                # Rows are paced on the simulator's clock, not the wall clock: a
                # simulator slower than real time must not receive targets faster
                # than its physics moves (JTC replace semantics would skip them).
                now = self._current_time(ep)
                if now < ep.get("next_row_t", 0.0) - EPS:
                    return
                ep["next_row_t"] = now + self.spec.hold_interval_s
                ep["t"] = now
            command = loop.next_command(ep["t"])
            if command is None:
                ep["state"], ep["since"] = "observe", time.monotonic()
                return
            self._send_command(ep, command, ep["t"])  # and the state stays: the next row follows
            return
        if self._lab_sim_not_up(ep):
            return  # no row taken: try again next tick
        segment = self._send_segment(ep, ep["t"])
        if segment is None:
            ep["state"], ep["since"] = "observe", time.monotonic()
            return
        request, rows = segment
        self._start_advance(ep, request, rows, then="execute")

    def _send_command(self, ep, command, t: float) -> tuple[bool, bool]:
        """One row's commands for the interval from boundary t (a hold row sends none);
        whether an arm and a gripper command went out."""
        if command.row is None:
            return False, False
        self._send_rows(ep, [command.row], self.spec.hold_interval_s, t=t)
        if command.gripper is None:
            return True, False
        self._send_gripper(command.gripper, t)
        return True, True

    def _send_rows(self, ep, rows, dt, t: float | None = None):
        """Arm targets one interval apart from the boundary t (default: now; JTC replace
        semantics)."""
        traj = JointTrajectory(joint_names=list(self.spec.dimension_names[:7]))
        s_to_stamp(ep["t"] if t is None else t, traj.header.stamp)
        for k, row in enumerate(rows, start=1):
            ns = int(round(k * dt * 1e9))
            traj.points.append(JointTrajectoryPoint(positions=[float(x) for x in row[:7]],
                                                    time_from_start=Duration(sec=ns // 10**9, nanosec=ns % 10**9)))
        self.pub_traj.publish(traj)

    def _send_gripper(self, value, t: float):
        """The gripper command of the interval from boundary t."""
        c = self.spec.gripper.command(value)
        msg = GripperCommand(grasp=c["grasp"], width=c["width"], speed=c["speed"], force=c["force"],
                             epsilon_inner=c["epsilon_inner"], epsilon_outer=c["epsilon_outer"])
        s_to_stamp(t, msg.header.stamp)
        self.pub_grip.publish(msg)

    def close(self):
        if self.ep is not None:
            self._end("error", "policy_bridge_shutdown")
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.system.close()

    def destroy_node(self):
        destroy_reader(self, "input_reader")
        return super().destroy_node()


def main(args=None):
    os.environ.setdefault("MUJOCO_GL", "egl")
    raise SystemExit(run_node(PolicyBridge, args))


if __name__ == "__main__":
    main()
