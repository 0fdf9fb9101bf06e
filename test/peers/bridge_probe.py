"""Starts an episode on a lone policy_bridge and prints what it answered:
"PROBE <json>" with the start reply, the status and the bridge's subscriptions.
usage: bridge_probe.py"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("bridge_probe")
    from labference.srv import StartEpisode

    from labference_ros.tasks.weighing.instances import generate

    status = peer.bridge_status()
    instance = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]
    reply = peer.call(StartEpisode, "/policy_bridge/start_episode",
                      StartEpisode.Request(episode_id="ep0", instance_json=instance.to_json()))
    deadline = time.monotonic() + 10
    while not status and time.monotonic() < deadline:
        time.sleep(0.01)
    subs = {t: peer.node.count_subscribers(t) for t in ("/joint_states", "/evaluator/world_state")}
    print("PROBE " + json.dumps({"success": reply.success, "message": reply.message,
                                 "status": status, "subscribers": subs}), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
