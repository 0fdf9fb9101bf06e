"""Stands in for lab_sim's /lab_sim/advance, starts an episode on a lone policy_bridge
and prints "RESULT <json>" with each advance request's duration and arrival (wall s
after the first) and the bridge's final status.
usage: lost_advance_reply.py lost|slow
  lost: the first request is never answered (its reply lost), the second is refused
        as "another advance is running", the rest are answered
  slow: the first request is answered 0.3 s after the second, which is refused as
        "another advance is running"
"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


def main() -> int:
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.task import Future

    from labference.srv import Advance, StartEpisode
    from labference_ros.core.advance_protocol import ADVANCE_RUNNING
    from labference_ros.tasks.weighing.instances import generate

    mode = sys.argv[1]
    peer = PeerSession("lab_sim")
    requests: list = []
    first_released = Future()
    timers: list = []

    def release_the_first():
        timers[0].cancel()
        first_released.set_result(None)

    async def on_advance(request, response):
        requests.append((request.duration_s, time.monotonic()))
        if len(requests) == 1:
            await first_released  # never, when its reply is lost
        elif len(requests) == 2:
            if mode == "slow":  # a node timer: it wakes the executor, which a plain thread would not
                timers.append(peer.node.create_timer(0.3, release_the_first))
            response.success, response.message = False, ADVANCE_RUNNING
            return response
        response.success, response.sim_time = True, 0.0
        return response

    # Reentrant: the held request would otherwise block every other callback of the node.
    peer.node.create_service(Advance, "/lab_sim/advance", on_advance, callback_group=ReentrantCallbackGroup())
    status = peer.bridge_status()
    instance = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]
    reply = peer.call(StartEpisode, "/policy_bridge/start_episode",
                      StartEpisode.Request(episode_id="ep0", instance_json=instance.to_json()))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and status.get("state") not in ("done", "error"):
        time.sleep(0.05)
    first = requests[0][1] if requests else 0.0
    print("RESULT " + json.dumps({"started": reply.success, "status": status,
                                  "requests": [[d, round(t - first, 3)] for d, t in requests]}), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
