"""One rule for "late" on both sides (issue 16, referee corner cases): a delivery is
late when stamped after the cutoff, max(last measurement handled, the runner's
finish t_end), and t_end <= 0 (the runner did not know the sim time) sets no
cutoff. The online node (nodes/referee.py: core.input_merge.feed while the episode
runs, core.input_merge.finish at the finish call) and the replay audit
(recording/replay.rebuild) must give identical records for the same inputs."""
from __future__ import annotations

import gzip
import json
import pathlib
import sys

from labference_ros.core.input_merge import Delivery, InputMerger, feed, finish, is_late
from labference_ros.core.measurements import BalanceMeasurement
from labference_ros.recording.replay import BagInputs, rebuild
from labference_ros.tasks import family

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "golden"))
from goldens import canonical  # noqa: E402
from test_golden import EPISODES, _world  # noqa: E402


def _golden(prefix: str) -> dict:
    with gzip.open(next(p for p in EPISODES if p.name.startswith(prefix)), "rt") as f:
        return json.load(f)


def _inputs(golden, extra=()):
    worlds = [_world(w) for w in golden["worlds"]]
    readings = [(t, BalanceMeasurement(**r)) for t, r in golden["readings"]]
    deliveries = [Delivery(**d) for d in golden["deliveries"]] + list(extra)
    return worlds, readings, deliveries


def _referee(golden):
    weighing = family("feedback_weighing")
    instance = weighing.instance_from_json(golden["instance_json"])
    return weighing, instance, weighing.make_referee(
        weighing.contract_for(instance.condition), instance, episode_id=golden["episode_id"],
        session_id=golden["episode_id"], deadline_s=golden["deadline_s"])


def _node(golden, t_end: float, reason: str, extra=()):
    """As the node scores: each input arrives in sim-time order (a delivery before
    the next world state, as the policy bridge's sync mode ensures) and is pumped at
    once; the finish call then releases the rest. Returns the written records (late
    ones are published, never written) with the final scores last, and the referee."""
    worlds, readings, deliveries = _inputs(golden, extra)
    _, _, referee = _referee(golden)
    by_t = dict(readings)
    arrivals = sorted([(w.t, 0, i, "world", w) for i, w in enumerate(worlds)]
                      + [(d.t, 1, i, "delivery", d) for i, d in enumerate(deliveries)], key=lambda a: a[:3])
    merger, last_t, out = InputMerger(), 0.0, []
    for _t, _o, _i, kind, x in arrivals:
        if kind == "world":
            merger.add_world(x)
            if x.t in by_t:
                merger.add_reading(x.t, by_t[x.t])
        else:
            merger.add_delivery(x)
        records, last_t = feed(referee, merger.drain(), last_t)
        out += records
    records, late = finish(referee, merger, last_t, t_end, reason)
    assert all(is_late(r) for r in late)
    return [r for r in out + records if not is_late(r)], referee


def _replay(golden, t_end: float, reason: str, extra=()):
    worlds, readings, deliveries = _inputs(golden, extra)
    weighing, instance, _ = _referee(golden)
    return rebuild(weighing, BagInputs(worlds=worlds, readings=readings, deliveries=deliveries), instance,
                   golden["episode_id"], (t_end, reason), golden["reports"], deadline_s=golden["deadline_s"])


def _same(a: list[dict], b: list[dict]) -> None:
    assert [canonical(r) for r in a] == [canonical(r) for r in b]


def _receipt_ids(records):
    return [r["payload_id"] for r in records if r["record"] == "receipt"]


def test_a_delivery_between_the_runners_finish_and_the_last_world_state_is_scored_alike():
    golden = _golden("preference_basic")  # ends by policy_stop: the referee does not end by itself
    last_world = max(w["t"] for w in golden["worlds"])
    t_end = round(last_world - 0.3, 9)  # the runner read its clock before the last world states came
    between = Delivery("obs-between", round(t_end + 0.155, 9), golden["episode_id"])
    after = Delivery("obs-after", round(last_world + 0.005, 9), golden["episode_id"])
    assert t_end < between.t < last_world < after.t
    node, referee = _node(golden, t_end, "policy_stop", [between, after])
    _same(node, _replay(golden, t_end, "policy_stop", [between, after]))
    # Stamped before the last measurement handled: on time on both sides. Stamped
    # after it and after t_end: late on both sides, not written.
    assert "obs-between" in _receipt_ids(node) and "obs-after" not in _receipt_ids(node)
    assert referee.late_inputs["observation"] == 1


def test_t_end_zero_sets_no_cutoff_on_either_side():
    # The runner sends sim_time=0.0 when it never saw the sim clock, and so does
    # test/peers/bridge_episode.py: no delivery may become late for that.
    golden = _golden("expert_basic")
    node, _ = _node(golden, 0.0, "completed")
    replay = _replay(golden, 0.0, "completed")
    _same(node, replay)
    assert len(_receipt_ids(replay)) == len(golden["deliveries"]) == 17
    _same(replay, golden["expected"])  # as with the recorded finish time (the referee ended at completion)


def test_t_end_zero_without_completion_gives_every_received_delivery():
    golden = _golden("preference_basic")
    node, referee = _node(golden, 0.0, "policy_stop")
    _same(node, _replay(golden, 0.0, "policy_stop"))
    assert len(_receipt_ids(node)) == len(golden["deliveries"]) and not referee.late_inputs
