"""Rebuilds the referee's output records from a bag, with the online scorer.

The bag's world states, balance readings and observation deliveries go through
core.input_merge.InputMerger and core.referee.Referee exactly as in
nodes/referee.py; explicit operation reports (a service, not a topic) are taken
from observations.jsonl at their sim time. Oracle interventions are scored as
the online referee scores them: when the policy bridge's /policy/receipts says
it handed one to the tested system (the receipt carries the intervention).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from labference_ros.cdr_views import BalanceReadingDecoder, WorldStateDecoder, decoded_or_reason
from labference_ros.core.input_merge import InputMerger, cutoff, feed, finish as finish_feed, is_late
from labference_ros.msgconv import delivery_from_receipt
from labference_ros.tasks.base import TaskFamily

WORLD, READING, POLICY_RECEIPTS, CHUNKS, EVENTS = ("/evaluator/world_state", "/balance/reading",
                                                   "/policy/receipts", "/policy/action_chunks", "/referee/events")
# On a real cell the referee reads the world estimator's checked reading instead
# (graphs/weighing_real.py remaps it): a bag that has it is re-scored from it.
CHECKED_READING = "/evaluator/balance_reading"
# Every topic the audit reads (bag_writer.chunk_group keeps them in chunks of their own).
AUDITED_TOPICS = (WORLD, READING, CHECKED_READING, POLICY_RECEIPTS, CHUNKS, EVENTS)


def reading_topic(topics) -> str:
    """The balance topic the online referee read in the run that left these topics."""
    return CHECKED_READING if CHECKED_READING in topics else READING


@dataclass
class BagInputs:
    worlds: list = field(default_factory=list)
    readings: list = field(default_factory=list)          # (t, BalanceMeasurement)
    deliveries: list = field(default_factory=list)        # Delivery
    interventions: list = field(default_factory=list)     # (t, dict) delivered by the bridge
    chunks: list = field(default_factory=list)            # ActionChunk messages
    policy_receipts: list = field(default_factory=list)   # DeliveryReceipt messages (all kinds)
    referee_events: list = field(default_factory=list)    # RefereeEvent messages as published online
    dropped_before_reset: int = 0
    undecodable: list = field(default_factory=list)       # measurements left out, and why

    @property
    def sim_span(self) -> tuple[float, float]:
        ts = [w.t for w in self.worlds]
        return (min(ts), max(ts)) if ts else (0.0, 0.0)

    @property
    def paired_end(self) -> float:
        """The last sim instant the bag holds both a world state and a reading. A reading
        reaches the recorder after the world state of its instant (through the
        balance), so a bag cut short can end between the two."""
        last_world = self.sim_span[1]
        if not self.readings:
            return last_world
        return min(last_world, max(t for t, _reading in self.readings))


def read_inputs(reader, episode_id: str) -> BagInputs:
    """Referee inputs of ``episode_id`` from the bag, in log-time order.

    If sim time jumps back (the simulator was reset after the recorder started),
    only the last segment belongs to the episode."""
    inp = BagInputs()
    last_world_t = None
    reading = reading_topic(reader.topics())
    for topic, t, msg in _decoded(reader, reading):
        if topic in (WORLD, reading):
            msg, why = msg
            if msg is None:  # left out, as the online referee leaves it out
                inp.undecodable.append(f"{topic} at log time {t}: {why}")
                continue
        if topic == WORLD:
            w = msg
            if last_world_t is not None and w.t < last_world_t:
                inp.dropped_before_reset += len(inp.worlds)
                inp.worlds, inp.readings, inp.deliveries = [], [], []
            last_world_t = w.t
            inp.worlds.append(w)
        elif topic == reading:
            inp.readings.append(msg)
        elif topic == POLICY_RECEIPTS:
            inp.policy_receipts.append(msg)
            d = delivery_from_receipt(msg, episode_id)
            if d is not None:
                inp.deliveries.append(d)
                if d.intervention is not None:
                    inp.interventions.append((d.t, d.intervention))
        elif topic == CHUNKS:
            inp.chunks.append(msg)
        elif topic == EVENTS:
            inp.referee_events.append(msg)
    return inp


def _decoded(reader, reading: str):
    """World states and readings straight to core measurements ((t, reading) for the
    latter), each as (value or None, why not); the rest as rclpy messages; images are
    never decoded."""
    wanted = {WORLD, reading, POLICY_RECEIPTS, CHUNKS, EVENTS}
    worlds, readings = WorldStateDecoder(), BalanceReadingDecoder()
    direct = {"labference/msg/WorldState": functools.partial(decoded_or_reason, worlds),
              "labference/msg/BalanceReading": functools.partial(decoded_or_reason, readings)}
    return reader.messages(wanted, direct=direct)


def rebuild(family: TaskFamily, inputs: BagInputs, instance, episode_id: str, finish: tuple[float, str],
            reports: list[dict], deadline_s: float | None = None, late: list | None = None,
            contract=None) -> list[dict]:
    """Every record the family's referee emits for these inputs, final scores last.
    ``late``, if given, receives the records of inputs given after the finish (late
    receipts and reports, input_merge.is_late), which are not part of the records.
    ``contract``: the family's contract for the instance's condition, when the caller
    has it already (its content hash is computed once per contract object)."""
    contract = contract if contract is not None else family.contract_for(instance.condition)
    referee = family.make_referee(contract, instance, episode_id=episode_id, session_id=episode_id,
                                  deadline_s=deadline_s)
    merger = InputMerger()
    for w in inputs.worlds:
        merger.add_world(w)
    for t, r in inputs.readings:
        merger.add_reading(t, r)
    for d in inputs.deliveries:
        merger.add_delivery(d)
    # Service-side inputs enter after the last measurement at or before their time,
    # as the online node applies them after pumping its inputs.
    side = sorted([(r["t"], 0, i, "report", r) for i, r in enumerate(reports)], key=lambda s: s[:3])
    t_end, reason = finish
    out: list[dict] = []
    last_t = 0.0
    # Deliveries stamped after the cutoff (core.input_merge.cutoff: the last
    # measurement fed or the runner's finish, whichever is later) are given after
    # the finish, as the node gives them: late, and not part of the records.
    items = merger.drain(final=True)
    end = cutoff(last_t, items, t_end)
    held: list = []
    for kind, item in items:
        if kind == "measure":
            while side and side[0][0] < item.t - 1e-12:
                out += _side_input(referee, side.pop(0), last_t)
        records, last_t = feed(referee, [(kind, item)], last_t, cutoff=end, held=held)
        out += records
    while side:
        out += _side_input(referee, side.pop(0), last_t)
    records, after_finish = finish_feed(referee, merger, last_t, t_end, reason, held=held)
    if late is not None:
        late += [r for r in out + records + after_finish if is_late(r)]
    return [r for r in out + records if not is_late(r)]


def _side_input(referee, entry, last_t: float) -> list[dict]:
    _t, _order, _i, _kind, x = entry
    if "requested_opportunity_id" in x:  # the report record keeps what was asked for
        opp, ev = x["requested_opportunity_id"], x.get("requested_evidence_version")
    else:
        # Records written before the request was kept: a stale_* reason is
        # reproduced by binding to an id that cannot match.
        opp = -2 if x.get("reason") == "stale_opportunity" else None
        ev = -2 if x.get("reason") == "stale_evidence" else None
    return referee.report_operation(x["operation"], last_t, opportunity_id=opp, evidence_version=ev,
                                    source=x.get("source", ""))
