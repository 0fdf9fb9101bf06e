"""The referee depends only on its inputs: online and replay agree exactly."""
from referee_streams import episode, instance

from labference_ros.tasks.weighing.contract import weighing_extended
from labference_ros.tasks.weighing.referee import Referee


def _script():
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.keep_measurements = True
    w.run(0.3)
    w.move("std_10", "pan")
    w.move("std_10", "table")
    w.move("std_50", "table")
    w.move("std_100", "pan")
    w.move("std_20", "floor")
    w.move("std_20", "pan")
    w.run(4.0)
    return inst, ref, w


def test_replay_of_saved_inputs_reproduces_online_outputs():
    inst, ref, w = _script()
    online = w.outputs + ref.finish(w.t)
    # Replay: same measurements and the same delivery notices, interleaved by time.
    receipts = [r for r in w.outputs if r["record"] == "receipt"]
    replay_ref = Referee(weighing_extended(), inst, episode_id="ep")
    replay, k = [], 0
    for m in w.measurements:
        replay += replay_ref.step(m)
        while k < len(receipts) and receipts[k]["t"] <= m.t + 1e-12:
            replay += replay_ref.deliver_observation(receipts[k]["payload_id"], receipts[k]["t"])
            k += 1
    replay += replay_ref.finish(w.t)
    assert replay == online
    final = online[-1]
    assert final["completion_class"] == "recovered" and final["execution"]["failed"] == 1
