"""Stands in for lab_sim's /lab_sim/advance and loses the reply to the first request
(it never answers it), refuses the second as "another advance is running" and
answers the rest; starts an episode on a lone policy_bridge and prints
"RESULT <json>" with each request's duration and arrival (wall s after the first)
and the bridge's final status.
usage: lost_advance_reply.py"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


def main() -> int:
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.task import Future

    from labference.srv import Advance, StartEpisode
    from labference_ros.nodes.advance_protocol import ADVANCE_RUNNING
    from labference_ros.tasks.weighing.instances import generate

    peer = PeerSession("lab_sim")
    requests: list = []
    never = Future()

    async def on_advance(request, response):
        requests.append((request.duration_s, time.monotonic()))
        if len(requests) == 1:
            await never  # the reply that is lost
        if len(requests) == 2:
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
