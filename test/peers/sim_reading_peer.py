"""Plays the simulated balance for the rehearsal's sics_emulator: publishes
/sim_balance/reading at 20 Hz with filtered_g read from the file named on the
command line (the test rewrites it to change the load), unstable for 0.3 s after
each change as a load cell's filter is. Runs until stopped."""
from __future__ import annotations

import pathlib
import sys
import time

from peer_session import PeerSession


def main() -> int:
    load_file = pathlib.Path(sys.argv[1])
    peer = PeerSession("sim_reading_peer")
    from labference.msg import BalanceReading
    from labference_ros.core.measurements import BalanceMeasurement
    from labference_ros.msgconv import fill_balance_msg
    from labference_ros.nodes.matching import measurement_qos

    pub = peer.node.create_publisher(BalanceReading, "/sim_balance/reading", measurement_qos(200))
    t = 0.0
    last, changed_t = None, 0.0
    print("PUBLISHING", flush=True)
    try:
        while True:
            grams = float(load_file.read_text())
            if grams != last:
                last, changed_t = grams, t
            reading = BalanceMeasurement(raw_g=grams, filtered_g=grams, displayed_g=round(grams, 1),
                                         stable=t - changed_t >= 0.3)
            pub.publish(fill_balance_msg(BalanceReading(), reading, t, "sim_load_cell"))
            t += 0.05
            time.sleep(0.05)
    except KeyboardInterrupt:
        pass
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
