"""policy_bridge: the policy boundary. Builds the whitelist observation from
registered topics, publishes its delivery receipt, calls the tested system,
checks the chunk against the ActionSpec and turns accepted rows into
JointTrajectory + GripperCommand messages, one control interval each.

Sync mode owns no physics but asks lab_sim to advance over commanded control
intervals only (/lab_sim/advance, command-stamped), so physics pauses during
inference; one advance runs up to rows_per_advance rows, and the next rows and
their advance are sent while it runs. Inference runs in a worker thread and every
service call is call_async, so the single-threaded executor never blocks.
The episode's state machine is core.bridge_machine.BridgeEpisode; its protocol
(evidence versions, stop rules, observation numbering and history, chunk checks,
row queue and invalidation, report binding) is core.episode_loop.EpisodeLoop, the
same class the Oracle's continuations run. This node moves their inputs and
outputs over ROS.
"""
from __future__ import annotations

import json
import os
import pathlib
import time
from concurrent.futures import ThreadPoolExecutor

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String

from labference.msg import DecisionOpportunity, DeliveryReceipt, Intervention, WorldState
from labference.srv import FinishEpisode, SetPause, StartEpisode
from labference_ros.core.action_conversion import identity
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.bridge_machine import BridgeEpisode, BridgeSettings
from labference_ros.core.episode_loop import STOP_HOLD_S, EpisodeLoop
from labference_ros.core.linefile import LineFile
from labference_ros.core.system_params import OWN_ARGUMENTS, merged_system_params
from labference_ros.cdr_views import WorldStateDecoder
from labference_ros.core.rates import CAMERA_RATE_HZ
from labference_ros.nodes.bridge_io import RECEIPT_QOS, BridgeIO
from labference_ros.nodes.matching import await_matched, image_qos
from labference_ros.nodes.run_dir import outside_run_dir
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.sampled import SampledInput, destroy_reader, reader_node
from labference_ros.oracle.handoff import SupportHandoff
from labference_ros.policies import EvaluationValidityError, make
from labference_ros.skills.safety_modes import checks_fixtures, for_episode, safety_check, safety_record
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family

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
MAX_STEPS_PER_TICK = 16
# Sync mode: the rows of a chunk one advance runs. Each advance costs a service round
# trip and its answer (the boundary's joint and world state); the rows sent for the
# advance that runs and the one asked ahead run even when an operator pauses meanwhile
# (the arm then decelerates from the last), so this also bounds how late a pause acts:
# at most 10 rows, 0.2 s of sim time at 50 Hz.
ROWS_PER_ADVANCE = 5
# The rows of two advances must fit lab_sim's command queues and its memory of commanded
# boundaries (matching.COMMAND_QUEUE_DEPTH, sync_protocol.COMMANDS_KEPT: 128 each).
MAX_ROWS_PER_ADVANCE = 50


def system_params(v: dict) -> dict:
    """The tested system's parameters, merged as the launcher checked them (core/system_params.py)."""
    return merged_system_params(v["system_params_json"], **{key: v.get(key, "") for key in OWN_ARGUMENTS})


class PolicyBridge(Node):
    def __init__(self):
        super().__init__("policy_bridge")
        p = self.declare_parameters("", [
            ("system", "display_reader"), ("system_params_json", "{}"), ("step_mode", "sync"),
            ("camera_rate", CAMERA_RATE_HZ), ("control_rate_hz", 50.0), ("max_chunk_length", 50),
            ("controller", "panda_arm_controller"), ("wait_for_referee_receipt", True),
            ("observation_timeout_s", 30.0), ("stop_hold_s", STOP_HOLD_S), ("episode_deadline_s", 0.0),
            ("agent_url", ""), ("agent_model", ""), ("support", "none"),
            ("task", DEFAULT_FAMILY), ("match_timeout_s", 5.0), ("safety", "none"),
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
        self.fixture_envelope = None  # (scene key, check) of the last episode's scene
        # Full-rollout Oracle support: what the oracle node sends, handed to the system at each handoff.
        self.support = SupportHandoff(v["support"], self.system)
        self.settings = BridgeSettings(
            sync=v["step_mode"] == "sync", rows_per_advance=self.rows_per_advance,
            hold_interval_s=self.spec.hold_interval_s, observation_timeout_s=float(v["observation_timeout_s"]),
            wait_for_referee_receipt=bool(v["wait_for_referee_receipt"]), privileged=self.system.privileged,
            cameras=tuple(self.cameras), camera_rate=float(v["camera_rate"]),
            scene_changes_on_its_own=self.scene_changes_on_its_own, source=str(v["system"]))
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inference")
        # Newest message per channel, as its serialized bytes: stamps are read from them
        # and a message is decoded only when an observation uses it (most never are).
        self.latest: dict[str, bytes] = {}
        self.world_decoder = WorldStateDecoder()
        self.echoes: dict[str, DeliveryReceipt] = {}  # referee receipts by observation id
        self.ep: BridgeEpisode | None = None
        self.answers: dict[str, tuple[str, bool, str]] = {}  # "start"/"finish": (episode id, success, message)

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
        self.io = BridgeIO(self, str(v["controller"]), str(v["report_mirror"]))  # what an episode sends
        self.pub_status = self.create_publisher(
            String, "/policy_bridge/status", QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
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
        self.log: LineFile | None = None  # this episode's policy_actions.jsonl
        self.log_error: OSError | None = None
        self.system_summary: dict | None = None

    # inputs -------------------------------------------------------------------
    def _keep(self, key, data: bytes):
        self.latest[key] = data
        if self.ep is not None and self.ep.state in ("observe", "execute"):
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
            self.ep.loop.note_evidence(version, observation_id)

    # episode lifecycle --------------------------------------------------------
    def _envelope_for(self, instance):
        """The episode's safety check: the mode's limits, and in the robot modes the
        fixtures of the instance's scene (built once per layout, condition and binding)."""
        if not checks_fixtures(self.safety):
            return self.envelope
        key = (instance.layout_hash, instance.condition, getattr(instance, "binding", None))
        if self.fixture_envelope is None or self.fixture_envelope[0] != key:
            self.fixture_envelope = (key, for_episode(self.envelope, self.safety, self.family, instance))
        return self.fixture_envelope[1]

    def on_start(self, request, response):
        return self._answer_once("start", request, response, self._start)

    def on_finish(self, request, response):
        return self._answer_once("finish", request, response, self._finish)

    def _answer_once(self, kind: str, request, response, serve):
        """A start or finish asked again for the same episode (the runner's resend after a lost
        reply) gets the first answer: never a second reset of the system, nor a second end."""
        key = f"{request.episode_id}|{getattr(request, 'output_dir', '')}"  # a later run's episode is another
        last = self.answers.get(kind)
        if last is not None and last[0] == key:
            response.success, response.message = last[1], last[2]
            return response
        if kind == "start":
            self.answers.pop("finish", None)  # a new episode: the last one's finish answers no repeat
        serve(request, response)
        self.answers[kind] = (key, response.success, response.message)
        return response

    def _start(self, request, response):
        refused = outside_run_dir(request.output_dir)
        if refused:
            response.success, response.message = False, f"cannot start: {refused}"
            return response
        try:
            instance = self.family.instance_from_json(request.instance_json)
            envelope = self._envelope_for(instance)
        except Exception as exc:  # a broken instance is reported, never crashes the node
            response.success, response.message = False, f"cannot start: {exc}"
            return response
        try:
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
        # or joint subscription would leave the first observation incomplete. In sync
        # mode lab_sim publishes every camera: wait for it even before the graph shows it.
        cameras = [f"/cameras/{cam}/image_raw" for cam in self.cameras] if self.settings.sync else []
        await_matched(self, self.inputs, float(self.v["match_timeout_s"]), required=cameras)
        self._close_log()
        # Nothing of the previous episode may reach this one (in realtime the newest joint
        # state also sets the bridge's clock: one from before the reset would run it ahead).
        self.latest.clear()
        for source in self.sampled.values():
            source.newest()  # dropped, as a callback's message before this start is
        self.echoes.clear()
        self.log, self.log_error, self.system_summary = log, None, None
        self.ep = None  # no record of the new episode before its loop exists
        loop = EpisodeLoop(self.system, self.conversion, episode_id=request.episode_id, instance=instance,
                           stop_hold_s=float(self.v["stop_hold_s"]),
                           deadline_s=float(self.v["episode_deadline_s"]), record=self.record,
                           wall_clock=time.time, envelope=envelope)
        self.ep = BridgeEpisode(loop, self.io, self.support, self.settings, episode_id=request.episode_id,
                                instance=instance)
        self._status(request.episode_id, "running", "")
        self.support.start_episode(request.episode_id)
        response.success = True
        response.message = json.dumps({"policy": {**self.system.profile(), **safety_record(self.safety)},
                                       "intervention": self.support.profile()})
        self.inference_poll.cancel()  # nothing of an earlier episode is awaited any more
        self.input_poll.cancel()
        self.tick()  # prime: the first advance goes out now
        return response

    def _finish(self, request, response):
        if self.ep is None or request.episode_id != self.ep.id:
            response.success, response.message = False, "no such episode"
            return response
        self._let_inference_finish(self.ep, request.reason or "finished")
        self.ep.end("done", request.reason or "finished")
        response.success = True
        # The system's own episode summary (the agent's usage) for the runner's run.json.
        response.message = json.dumps({"system_summary": self.system_summary})
        return response

    def on_pause(self, request, response):
        """The operator stops the arm (pause) or lets the system go on (resume)."""
        ep = self.ep
        if ep is None or request.episode_id != ep.id or ep.ended:
            response.success, response.message = False, f"no running episode {request.episode_id!r}"
            return response
        if request.pause:
            ep.pause(request.reason)
        else:
            ep.resume(request.reason)
        response.success = True
        response.message = "paused" if ep.paused else "running"
        self.tick()  # resumed: go on now, not at the next timer or input
        return response

    def _let_inference_finish(self, ep, reason: str):
        """A model request in flight when the runner ends the episode is still
        charged: stop new dispatches, then wait for it (bounded, below the
        runner's service timeout) before the system's summary is taken."""
        fut = ep.inference
        if fut is None or fut.done():
            return
        self.system.stop_dispatch(reason)
        try:
            fut.result(timeout=FINISH_WAIT_S)
        except Exception:  # timeout or the system's own error: the episode is ending either way
            pass

    def episode_ended(self, state: str, reason: str):
        self.inference_poll.cancel()
        self.input_poll.cancel()
        self.ep.drop_pending_advances(ahead_too=True)  # an ended episode awaits no answer
        summary = self.system.end_episode(reason)
        if summary is not None:
            self.system_summary = summary
            self.record({"record": "system_summary", **summary})
        self.record({"record": "end", "state": state, "reason": reason, "t": self.ep.t})
        self._status(self.ep.id, state, reason)
        self._close_log()

    def _status(self, episode_id, state, reason):
        self.pub_status.publish(String(data=json.dumps(
            {"episode_id": episode_id, "state": state, "reason": reason})))

    def record(self, entry: dict):
        if self.log and self.ep:
            try:
                self.log.write_line(json.dumps({"episode_id": self.ep.id, **entry}))
            except OSError as exc:  # e.g. a full disk: this log stops; tick() ends the episode as invalid
                self.log_error = exc
                self._close_log()

    def _close_log(self):
        if self.log:
            self.log.close()
            self.log = None

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
                state = ep.state if ep is not None else None
                self._step()
                if not self._tick_again and (self.ep is not ep or ep is None or ep.state == state):
                    break  # waiting for something
        finally:
            self._ticking = False

    def _step(self):
        ep = self.ep
        if ep is None or ep.ended:
            return
        if self.log_error is not None:
            exc = self.log_error
            ep.end("error", f"evaluation invalid: cannot write policy_actions.jsonl: {exc.strerror or exc}")
            return
        ep.step()

    def close(self):
        if self.ep is not None:
            self.ep.end("error", "policy_bridge_shutdown")
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
