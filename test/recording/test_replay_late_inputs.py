"""Inputs after episode_end (issue 16, referee corner cases): the online node and the
replay audit give deliveries stamped after the cutoff (core.input_merge.cutoff) to
the referee through core.input_merge after its finish, so they are late, counted,
and never make the rebuilt records differ."""
from __future__ import annotations

import gzip
import json
import pathlib
import sys

from labference_ros.core.input_merge import Delivery, InputMerger, finish, is_late
from labference_ros.core.measurements import BalanceMeasurement
from labference_ros.recording.replay import BagInputs, rebuild
from labference_ros.tasks import family

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "golden"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
from referee_streams import episode  # noqa: E402
from test_golden import EPISODES, _world  # noqa: E402


def _rebuild(golden, extra_deliveries=(), late=None):
    weighing = family("feedback_weighing")
    inputs = BagInputs(worlds=[_world(w) for w in golden["worlds"]],
                       readings=[(t, BalanceMeasurement(**r)) for t, r in golden["readings"]],
                       deliveries=[Delivery(**d) for d in golden["deliveries"]] + list(extra_deliveries))
    instance = weighing.instance_from_json(golden["instance_json"])
    return rebuild(weighing, inputs, instance, golden["episode_id"], tuple(golden["finish"]),
                   golden["reports"], deadline_s=golden["deadline_s"], late=late)


def test_a_delivery_late_only_by_the_runners_finish_leaves_the_rebuilt_records_unchanged():
    # An episode the referee does not end by itself (policy_stop: no completion, no
    # deadline), so only the runner's finish and the cutoff rule make the delivery late.
    path = next(p for p in EPISODES if p.name.startswith("preference_basic"))
    with gzip.open(path, "rt") as f:
        golden = json.load(f)
    t_end, reason = golden["finish"]
    assert reason == "policy_stop" and golden["deadline_s"] > t_end
    last_world = max(w["t"] for w in golden["worlds"])
    # Stamped after the cutoff, max(last measurement, t_end): given after the finish,
    # late, not written. Given before it, it would add a receipt (and could open an
    # opportunity) and move the episode_end record.
    late = Delivery("obs-after-finish", round(max(last_world, t_end) + 0.01, 9), golden["episode_id"])
    late_records: list[dict] = []
    with_late = _rebuild(golden, [late], late=late_records)
    assert with_late == _rebuild(golden)
    assert "obs-after-finish" not in [r.get("payload_id") for r in with_late]
    # The audit learns which observations came late (their chunks are not checked).
    assert [(r["kind"], r["payload_id"]) for r in late_records] == [("observation", "obs-after-finish")]
    assert all(is_late(r) for r in late_records)


def test_a_delivery_after_the_referees_own_completion_is_late_and_reported_to_the_audit():
    # The bridge can observe between the referee's completion and the runner's finish:
    # before the cutoff, so the delivery is given in order, to a finished referee.
    path = next(p for p in EPISODES if p.name.startswith("expert_extended"))
    with gzip.open(path, "rt") as f:
        golden = json.load(f)
    (end,) = [r["t"] for r in golden["expected"] if r.get("category") == "episode_end"]
    last_world = max(w["t"] for w in golden["worlds"])
    t_end, reason = golden["finish"]
    assert reason == "completed" and end < t_end <= last_world
    late = Delivery("obs-after-completion", round(end + 0.005, 9), golden["episode_id"])
    late_records: list[dict] = []
    assert _rebuild(golden, [late], late=late_records) == _rebuild(golden)
    assert [(r["kind"], r["payload_id"]) for r in late_records] == [("observation", "obs-after-completion")]


def test_finish_gives_deliveries_stamped_after_the_cutoff_as_late():
    ref, w = episode(observe_every_s=None)
    w.keep_measurements = True
    w.referee = None  # record the stream, then feed it as the node does
    w.run(1.0)
    merger = InputMerger()
    for m in w.measurements:
        merger.add_world(m)
        merger.add_reading(m.t, m.balance)
    last_world = max(m.t for m in w.measurements)
    merger.add_delivery(Delivery("obs-1", 0.5, "ep"))
    # After the runner's finish at 0.8 but before the last measurement handled: on time.
    merger.add_delivery(Delivery("obs-2", 0.9, "ep"))
    # After both (the cutoff, max(last measurement, finish)): late.
    merger.add_delivery(Delivery("obs-3", round(last_world + 0.05, 9), "ep"))
    out, late = finish(ref, merger, 0.0, 0.8, "episode_end")
    assert out[-1]["record"] == "scores" and out[-1]["t"] >= last_world
    receipts = [r for r in out if r["record"] == "receipt"]
    assert [r["payload_id"] for r in receipts] == ["obs-1", "obs-2"]
    assert [r["payload_id"] for r in late] == ["obs-3"] and all(is_late(r) for r in late)
    assert ref.late_inputs["observation"] == 1


def test_the_audit_repeats_each_reports_request_from_its_record():
    # Reports as the node received them (stated opportunity and evidence ids), then
    # the audit's rebuild from the report records written: identical records, with
    # no sentinel standing in for what the reporter asked.
    path = next(p for p in EPISODES if p.name.startswith("reader_basic"))
    with gzip.open(path, "rt") as f:
        golden = json.load(f)
    plain = _rebuild(golden)
    opp = next(r for r in plain if r["record"] == "opportunity" and r["trigger"] == "confirmed_change")
    t0 = opp["delivery_time"]
    op = {"type": "add", "object": "std_10", "destination": "pan"}
    asked = [
        {"t": t0 + 0.1, "operation": op, "source": "s", "requested_opportunity_id": opp["opportunity_id"] - 1,
         "requested_evidence_version": None},
        {"t": t0 + 0.2, "operation": op, "source": "s", "requested_opportunity_id": None,
         "requested_evidence_version": opp["evidence_version"] + 5},
        {"t": t0 + 0.3, "operation": op, "source": "s", "requested_opportunity_id": opp["opportunity_id"],
         "requested_evidence_version": opp["evidence_version"]},
    ]
    online = _rebuild({**golden, "reports": asked})
    reports = [r for r in online if r["record"] == "report"]
    assert [r["reason"] for r in reports] == ["stale_opportunity", "stale_evidence", ""]
    assert [r["requested_opportunity_id"] for r in reports] == [opp["opportunity_id"] - 1, None,
                                                                 opp["opportunity_id"]]
    assert _rebuild({**golden, "reports": reports}) == online
