"""Inputs after episode_end (issue 16, referee corner cases): the online node and the
replay audit give them to the referee through core.input_merge after its finish, so
they are late, counted, and never make the rebuilt records differ."""
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


def _rebuild(golden, extra_deliveries=()):
    weighing = family("feedback_weighing")
    inputs = BagInputs(worlds=[_world(w) for w in golden["worlds"]],
                       readings=[(t, BalanceMeasurement(**r)) for t, r in golden["readings"]],
                       deliveries=[Delivery(**d) for d in golden["deliveries"]] + list(extra_deliveries))
    instance = weighing.instance_from_json(golden["instance_json"])
    return rebuild(weighing, inputs, instance, golden["episode_id"], tuple(golden["finish"]),
                   golden["reports"], deadline_s=golden["deadline_s"])


def test_a_delivery_after_the_runners_finish_leaves_the_rebuilt_records_unchanged():
    path = next(p for p in EPISODES if p.name.startswith("expert_extended"))
    with gzip.open(path, "rt") as f:
        golden = json.load(f)
    t_end = golden["finish"][0]
    last_world = max(w["t"] for w in golden["worlds"])
    assert last_world > t_end  # the bag holds world states after the finish
    # Delivered after the finish but before the bag's last world state: without the
    # rule it would be delivered before the end (and could open an opportunity).
    late = Delivery("obs-after-finish", round(t_end + 0.01, 9), golden["episode_id"])
    assert t_end < late.t <= last_world
    assert _rebuild(golden, [late]) == _rebuild(golden)


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
