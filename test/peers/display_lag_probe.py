"""Plays a balance that answers late and reads the display lab_sim renders.

Answers every /balance/wrench with a BalanceReading of the wrench's stamp showing
value_at(stamp) grams, but only DELAY_S of wall time after the wrench arrived
(a loaded machine's balance node). Resets lab_sim, advances it in 20 ms steps (as
the policy bridge does) to END_S, decodes the display camera's frames and prints
"FRAMES <json list of [frame stamp, decoded grams or null]>".

With "silent" on the command line the balance never answers: the advance to the
frame at 0.1 s waits, a reset meanwhile ends it ("INTERRUPTED <success> <message>"),
and after the reset the same advance waits out lab_sim's limit once and then
carries on to END_S ("SILENT_DONE <success of every advance> <sim time>").
"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession

DELAY_S = 0.05
END_S = 0.6


def value_at(t: float) -> float:
    return round(100.0 + 1000.0 * t, 1)


def main() -> int:
    silent = "silent" in sys.argv[1:]
    peer = PeerSession("display_lag_probe")
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import Image

    from labference.msg import BalanceReading
    from labference.srv import Advance, ResetEpisode
    from labference_ros.core.measurements import BalanceMeasurement
    from labference_ros.msgconv import fill_balance_msg, stamp_to_s
    from labference_ros.nodes.matching import measurement_qos
    from labference_ros.perception.display_decode import decode_display
    from labference_ros.tasks.weighing.instances import generate

    import numpy as np

    node = peer.node
    readings = node.create_publisher(BalanceReading, "/balance/reading", measurement_qos(200))
    owed: list[tuple[float, float]] = []  # (wall time due, stamp)
    node.create_subscription(WrenchStamped, "/balance/wrench",
                             lambda m: owed.append((time.monotonic() + DELAY_S, stamp_to_s(m.header.stamp))),
                             measurement_qos(200))

    def answer():
        while owed and owed[0][0] <= time.monotonic() and not silent:
            _due, t = owed.pop(0)
            reading = BalanceMeasurement(raw_g=value_at(t), filtered_g=value_at(t), displayed_g=value_at(t),
                                         stable=True)
            readings.publish(fill_balance_msg(BalanceReading(), reading, t, "late_balance"))

    node.create_timer(0.002, answer)
    frames: dict[float, object] = {}

    def on_frame(m: Image):
        pixels = np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width, 3)
        frames[round(stamp_to_s(m.header.stamp), 6)] = decode_display(pixels).value

    node.create_subscription(Image, "/cameras/display/image_raw", on_frame, 10)
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    deadline = time.monotonic() + 30
    while readings.get_subscription_count() == 0 and time.monotonic() < deadline:  # lab_sim has matched it
        time.sleep(0.01)
    reset = ResetEpisode.Request(instance_json=instance.to_json())
    assert peer.call(ResetEpisode, "/lab_sim/reset", reset).success
    t = 0.0
    assert peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.0)).success
    if silent:
        return silent_run(peer, reset, Advance, ResetEpisode)
    while t < END_S - 1e-9:
        res = peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.02))
        assert res.success, res.message
        t = res.sim_time
    deadline = time.monotonic() + 10
    while len(frames) < round(END_S * 10) + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    print("FRAMES " + json.dumps(sorted(frames.items())), flush=True)
    peer.close()
    return 0


def silent_run(peer, reset, Advance, ResetEpisode) -> int:
    for _ in range(4):  # to 0.08 s: no frame is owed a reading yet
        assert peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.02)).success
    pending = peer.client(Advance, "/lab_sim/advance").call_async(Advance.Request(duration_s=0.02))
    time.sleep(1.0)  # the frame at 0.1 s is waiting for the reading stamped 0.08 s
    assert peer.call(ResetEpisode, "/lab_sim/reset", reset).success
    res = peer.wait(pending, 20)
    print(f"INTERRUPTED {bool(res and res.success)} {res.message if res else 'no reply'}", flush=True)
    ok = peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.0)).success
    t = 0.0
    while t < END_S - 1e-9:
        res = peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.02))
        ok, t = ok and res.success, res.sim_time
    print(f"SILENT_DONE {ok} {t:.2f}", flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
