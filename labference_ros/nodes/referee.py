"""referee: runs the task family's referee on measurements (tasks.<family>.referee), publishes
events, legal sets, opportunities and live scores, and writes the run records."""
from __future__ import annotations

import json
import os

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from labference.msg import (BalanceReading, DecisionOpportunity, DeliveryReceipt, LegalSet, Operation,
                            RefereeEvent, ScoreSnapshot, WorldState)
from labference.srv import FinishEpisode, ReportOperation, StartEpisode
from labference_ros.cdr_views import BalanceReadingDecoder, WorldStateDecoder, decoded_or_reason
from labference_ros.core.input_merge import (LATE_REPORT_ANSWER, InputMerger, feed, finish as finish_feed, is_late,
                                             report_answer)
from labference_ros.core.records import RunRecords, episode_deadline, final_status, run_info
from labference_ros.core.scoring import tri
from labference_ros.msgconv import delivery_from_receipt, s_to_stamp, stamp_to_s
from labference_ros.nodes.catch_up import CatchUp
from labference_ros.nodes.matching import PAIRED_MEASUREMENT_TOPICS, await_matched, measurement_qos
from labference_ros.nodes.run_dir import outside_run_dir
from labference_ros.nodes.runtime import run_node
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family


def operation_msg(op: dict | None) -> Operation:
    op = op or {}
    return Operation(type=op.get("type", ""), object=op.get("object", ""), destination=op.get("destination", ""))


def _num(x) -> float:
    return float("nan") if x is None else float(x)


class RefereeNode(Node):
    def __init__(self):
        super().__init__("referee")
        # The task family whose referee scores this graph's episodes.
        self.family = task_family(str(self.declare_parameter("task", DEFAULT_FAMILY).value))
        qos = QoSProfile(depth=500)
        # Deliveries and their echoes are latched: one published before the peer's
        # subscription matched (discovery can take seconds) still arrives.
        latched = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_events = self.create_publisher(RefereeEvent, "/referee/events", qos)
        self.pub_legal = self.create_publisher(LegalSet, "/referee/legal_set", qos)
        self.pub_opps = self.create_publisher(DecisionOpportunity, "/referee/opportunities", qos)
        self.pub_scores = self.create_publisher(ScoreSnapshot, "/referee/scores", qos)
        # Echo of each delivery as the referee scored it; in sync mode the policy
        # bridge waits for it before physics advances (input ordering, core/input_merge.py).
        self.pub_receipts = self.create_publisher(DeliveryReceipt, "/referee/receipts", latched)
        self.inputs = {
            # Raw bytes, decoded by the replay audit's decoders (cdr_views): the online and the
            # audited referee get their measurements from the same code, without rclpy's
            # per-field Python message objects.
            "/evaluator/world_state": self.create_subscription(WorldState, "/evaluator/world_state", self.on_world,
                                                               measurement_qos(500), raw=True),
            "/balance/reading": self.create_subscription(BalanceReading, "/balance/reading", self.on_reading,
                                                         measurement_qos(500), raw=True),
            "/policy/receipts": self.create_subscription(DeliveryReceipt, "/policy/receipts", self.on_receipt, latched),
        }
        self.match_timeout_s = float(self.declare_parameter("match_timeout_s", 5.0).value)
        # A second referee of the same episodes (the rehearsal's shadow, remapped to its own
        # topics and services) writes its records in this folder of the episode's directory.
        self.records_subdir = str(self.declare_parameter("records_subdir", "").value).strip("/")
        if ".." in self.records_subdir.split("/"):
            raise ValueError(f"records_subdir must stay inside the episode's directory, got {self.records_subdir!r}")
        self.create_service(StartEpisode, "/referee/start_episode", self.on_start)
        # A finish waits (at most finish_timeout_s) until the episode's measurements are in:
        # see _caught_up. Its own callback group, so the subscriptions run meanwhile.
        self.finish_timeout_s = float(self.declare_parameter("finish_timeout_s", 5.0).value)
        self.catch_up = CatchUp(self)
        self.create_service(FinishEpisode, "/referee/finish_episode", self.on_finish,
                            callback_group=MutuallyExclusiveCallbackGroup())
        self.create_service(ReportOperation, "/referee/report_operation", self.on_report)
        self.referee = None  # the family's episode referee while one is scored
        self.records: RunRecords | None = None
        self.records_error: OSError | None = None  # the first failed write of this episode's records
        self.merger = InputMerger(readings=self.family.reads_balance)
        self.world_decoder, self.reading_decoder = WorldStateDecoder(), BalanceReadingDecoder()
        self.last_t = 0.0
        self.finished_episode = ""  # the episode last finished: later inputs of it are late
        # Start and finish are idempotent: the request that started the episode being scored,
        # and the last finish's answer (episode id, success, message, scores), given again
        # when the same call is repeated.
        self.started: tuple | None = None
        self.finish_answer: tuple | None = None
        self.newest: dict[str, float] = {}  # topic -> newest stamp (sim s) received this episode

    # episode lifecycle --------------------------------------------------------
    def on_start(self, request, response):
        refused = outside_run_dir(request.output_dir)
        if refused:
            response.success, response.message = False, f"cannot start episode: {refused}"
            return response
        request_key = (request.episode_id, request.instance_json, request.output_dir, request.run_json)
        if self.started == request_key:
            # The same start asked again (its reply was lost, docs/pitfalls.md): the episode
            # being scored is that one; starting it anew would drop what it has scored, and a
            # copy arriving after the finish would write over the finished episode's records.
            if self.referee is not None:
                response.success, response.message = True, f"already scoring {request.episode_id}"
            else:
                response.success = False
                response.message = f"{request.episode_id} was already scored; its records stay as they are"
            return response
        self.catch_up.cancel()  # a finish still waiting for the old episode's measurements gives up
        self._close_records("superseded")
        # The episode's first world state and reading are published once: a referee
        # not yet matched with lab_sim and the balance would miss them (seen under CI load).
        await_matched(self, self.inputs, self.match_timeout_s)
        try:
            instance = self.family.instance_from_json(request.instance_json)
            contract = self.family.contract_for(instance.condition)
            extra = json.loads(request.run_json) if request.run_json else {}
            info = run_info(contract, instance, episode_id=request.episode_id, **extra)
            out_dir = os.path.join(request.output_dir, self.records_subdir) if self.records_subdir else request.output_dir
            self.records = RunRecords(out_dir, info)
        except Exception as exc:  # a broken instance or profile is reported, never crashes the node
            response.success, response.message = False, f"cannot start episode: {exc}"
            return response
        self.referee = self.family.make_referee(contract, instance, episode_id=request.episode_id,
                                               session_id=request.episode_id, deadline_s=episode_deadline(info))
        self.merger = InputMerger(readings=self.family.reads_balance)
        self.last_t = 0.0
        self.newest = {}
        self.started = request_key
        response.success, response.message = True, f"scoring {request.episode_id} with {contract.contract_id}"
        return response

    async def on_finish(self, request, response):
        if self.referee is None and self.finish_answer and self.finish_answer[0] == request.episode_id:
            # The last finish asked again (its reply was lost): the same answer, scored once.
            response.success, response.message, response.scores_json = self.finish_answer[1:]
            return response
        if self.referee is None or request.episode_id != self.referee.episode_id:
            response.success, response.message = False, "no such episode is being scored"
            return response
        # A finish asked again while the first waits is served after it (the finish service's
        # callback group is exclusive): it gets the answer above.
        if self.catch_up.busy:
            response.success, response.message = False, f"{request.episode_id} is already being finished"
            return response
        # The runner's finish time: in simulation a measurement instant (its clock is lab_sim's
        # /clock, published with each measurement); 0 when it had none.
        target = max([request.sim_time - 1e-6, *self.newest.values()])
        scored = self.referee
        caught_up = await self.catch_up.until(lambda: self._caught_up(target), self.finish_timeout_s)
        if self.referee is not scored:  # a start or a shutdown closed the episode meanwhile
            response.success, response.message = False, "no such episode is being scored"
            return response
        if not caught_up:
            behind = ", ".join(f"{topic} to {self.newest.get(topic, float('nan')):.3f} s"
                               for topic in PAIRED_MEASUREMENT_TOPICS)
            self.get_logger().warning(f"finishing {request.episode_id} before its measurements caught up "
                                      f"with {target:.3f} s ({behind})")
        # Deliveries stamped after the cutoff (core.input_merge.cutoff: the last
        # measurement handled or the runner's finish, whichever is later; none when
        # sim_time <= 0) are given after the finish: late. The replay audit uses the same rule.
        out, late = finish_feed(self.referee, self.merger, self.last_t, request.sim_time,
                                request.reason or "episode_end")
        self._emit(out)
        self._emit(late)
        scores = out[-1]
        self.finished_episode = self.referee.episode_id
        try:
            self.records.write_scores({k: v for k, v in scores.items() if k != "record"},
                                      status=final_status(request.reason))
        except OSError as exc:
            self._records_failed(exc)
        failure = self.records_error
        self._close_records(None)
        response.scores_json = json.dumps(scores, default=str)
        if failure is not None:
            # Scored in memory, but the records are incomplete: not a valid evaluation.
            response.success = False
            response.message = f"cannot write the episode's records: {failure.strerror or failure} ({failure.filename})"
        else:
            response.success = True
        self.finish_answer = (request.episode_id, response.success, response.message, response.scores_json)
        return response

    def _caught_up(self, target: float) -> bool:
        """Every measurement topic that carried this episode's measurements has reached
        ``target``: the runner's finish time, or the newest stamp received on any of them
        when the finish came if later. World states and readings are published per
        measurement instant with the same stamp (lab_sim's world state and the balance's
        reading of its wrench; in the rehearsal and on a rig the world estimator's), so a
        topic behind has a sample in flight (e.g. one DDS resends at its writer's next
        heartbeat). Scored now, the world states it lacks would go without their readings;
        arrived after the next episode's start (sim time starts again at each reset), it
        would pass for that episode's future and release its world states without theirs."""
        return all(self.newest[topic] >= target - 1e-9
                   for topic in PAIRED_MEASUREMENT_TOPICS if topic in self.newest)

    def _records_failed(self, exc: OSError) -> None:
        """A write failed (e.g. the disk is full): say so once, write no more of this episode."""
        if self.records_error is None:
            self.records_error = exc
            self.get_logger().error(f"records stopped: {exc.strerror or exc} ({exc.filename})")

    def _close_records(self, reason: str | None) -> None:
        if self.records is not None and self.referee is not None and reason and self.records_error is None:
            from labference_ros.core.records import stop_early

            try:
                stop_early(self.records, self.referee, self.last_t, reason)
            except OSError as exc:
                self._records_failed(exc)
        if self.records is not None:
            self.records.close()
        self.records = None
        self.referee = None
        self.records_error = None

    def close(self):
        self.catch_up.cancel()
        # A node stopped mid-episode still leaves scores.json (status = the stop reason).
        if self.referee is not None and self.records is not None:
            self._pump(final=True)
        self._close_records("referee_shutdown")

    # inputs -------------------------------------------------------------------
    def on_world(self, data: bytes):
        if self.referee is not None:
            measurement = self._decoded(self.world_decoder, data, "/evaluator/world_state")
            if measurement is not None:
                self._received("/evaluator/world_state", measurement.t)
                self.merger.add_world(measurement)
                self._pump()

    def on_reading(self, data: bytes):
        if self.referee is not None:
            stamped = self._decoded(self.reading_decoder, data, "/balance/reading")
            if stamped is not None:
                self._received("/balance/reading", stamped[0])
                self.merger.add_reading(*stamped)
                self._pump()

    def _received(self, topic: str, t: float) -> None:
        self.newest[topic] = max(t, self.newest.get(topic, t))

    def _decoded(self, decoder, data: bytes, topic: str):
        value, why = decoded_or_reason(decoder, data)
        if value is None:
            # Lost, as the audit loses it: the referee sees a gap (no reading: an invalid window).
            self.get_logger().error(f"{topic}: undecodable message ({len(data)} bytes) left out: {why}",
                                    throttle_duration_sec=5.0)
        return value

    def on_receipt(self, msg: DeliveryReceipt):
        if self.referee is None:
            if self.finished_episode and msg.episode_id == self.finished_episode:
                self.get_logger().info(f"late delivery after episode_end of {msg.episode_id} "
                                       f"(t={stamp_to_s(msg.header.stamp)}): not scored")
            return
        d = delivery_from_receipt(msg, self.referee.episode_id)
        if d is not None:
            self.merger.add_delivery(d)
            self._pump()

    def on_report(self, request, response):
        if self.referee is None and self.finished_episode and request.episode_id == self.finished_episode:
            self.get_logger().info(f"late report after episode_end of {request.episode_id}: not scored")
            response.accepted, response.message = LATE_REPORT_ANSWER
            return response
        if self.referee is None or request.episode_id != self.referee.episode_id:
            response.accepted, response.message = False, "no such episode is being scored"
            return response
        self._pump()
        op = {"type": request.operation.type, "object": request.operation.object,
              "destination": request.operation.destination}
        # Negative ids mean "not stated" (the message has no optional fields).
        out = self.referee.report_operation(
            op, self.last_t, opportunity_id=request.opportunity_id if request.opportunity_id >= 0 else None,
            evidence_version=request.evidence_version if request.evidence_version >= 0 else None,
            source=request.source)
        self._emit(out)
        report = out[0]
        response.accepted, response.message = report_answer(report)
        response.report_id = str(report.get("report_id", ""))
        return response

    def _pump(self, final: bool = False) -> None:
        # No cutoff before the finish: a delivery drained during the episode is stamped
        # at or before a measurement handled, so the finish's cutoff cannot make it late.
        for item in self.merger.drain(final):
            out, self.last_t = feed(self.referee, [item], self.last_t)
            self._emit(out)

    # outputs ------------------------------------------------------------------
    def _emit(self, records: list[dict]) -> None:
        for r in records:
            if r["record"] == "scores":
                continue
            if is_late(r):
                # After episode_end: published (the bridge settles a late support), logged, not written.
                self.get_logger().info(f"late {r.get('kind', r['record'])} after episode_end: "
                                       f"{r.get('payload_id') or r.get('report_id', '')} at t={r.get('t')}")
            elif self.records_error is None:
                try:
                    self.records.write(r)
                except OSError as exc:
                    self._records_failed(exc)
            publish = getattr(self, f"_publish_{r['record']}", None)
            if publish:
                publish(r)

    def _header(self, msg, t):
        s_to_stamp(t, msg.header.stamp)
        msg.episode_id = self.referee.episode_id
        return msg

    def _publish_event(self, r):
        msg = self._header(RefereeEvent(), r["t"])
        msg.event_id, msg.category, msg.object = r["event_id"], r["category"], r.get("object") or ""
        msg.operation = operation_msg(r.get("operation"))
        msg.opportunity_id, msg.evidence_version = int(r.get("opportunity_id", -1)), int(r.get("evidence_version", 0))
        msg.attempt, msg.measured_value = int(r.get("attempt") or 0), _num(r.get("measured_value"))
        msg.detail_json = json.dumps(r.get("detail") or {}, default=str)
        self.pub_events.publish(msg)

    def _publish_legal_set(self, r):
        msg = self._header(LegalSet(), r["t"])
        msg.opportunity_id, msg.evidence_version = int(r["opportunity_id"]), int(r["evidence_version"])
        msg.operations = [operation_msg(op) for op in r.get("operations", [])]
        msg.state_json = json.dumps(r.get("state", {}), default=str)
        self.pub_legal.publish(msg)

    def _publish_opportunity(self, r):
        msg = self._header(DecisionOpportunity(), r["t"])
        msg.id, msg.evidence_version, msg.trigger = int(r["opportunity_id"]), int(r["evidence_version"]), r["trigger"]
        s_to_stamp(r.get("event_time") or r["t"], msg.event_time)
        msg.delivered_observation_id = r.get("delivered_observation_id") or ""
        msg.response_window_s, msg.session_id = float(r["response_window_s"]), r.get("session_id") or ""
        msg.reference_state_json = json.dumps(r.get("reference_state", {}), default=str)
        self.pub_opps.publish(msg)

    def _publish_receipt(self, r):
        msg = self._header(DeliveryReceipt(), r["t"])
        msg.receipt_id, msg.kind, msg.payload_id = r["receipt_id"], r["kind"], r["payload_id"]
        msg.opportunity_id, msg.evidence_version = int(r["opportunity_id"]), int(r["evidence_version"])
        msg.status = r["status"]
        msg.detail_json = json.dumps({k: r[k] for k in ("opened", "site", "mode", "reasons") if k in r})
        self.pub_receipts.publish(msg)

    def _publish_score_snapshot(self, r):
        msg = self._header(ScoreSnapshot(), r["t"])
        msg.opportunities = int(r.get("opportunities") or 0)
        msg.identified_choices, msg.correct_choices = int(r["identified_choices"]), int(r["correct_choices"])
        msg.first_choice_correct, msg.executed = tri(r["first_choice_correct"]), tri(r["executed"])
        msg.physically_complete, msg.valid_complete = tri(r["physically_complete"]), tri(r["valid_complete"])
        msg.clean_complete, msg.recovered_complete = tri(r["clean_complete"]), tri(r["recovered_complete"])
        msg.terminal_dwell_s = float(r.get("terminal_dwell_s") or 0.0)
        msg.scores_json = json.dumps(r, default=str)
        self.pub_scores.publish(msg)


def main(args=None):
    raise SystemExit(run_node(RefereeNode, args))


if __name__ == "__main__":
    main()
