"""Asks a lone policy_bridge to start one episode twice and finish it twice, as the runner
does when a reply is lost, and prints "PROBE <json>" with the four answers.
usage: bridge_repeat_probe.py OUTPUT_DIR"""
from __future__ import annotations

import json
import sys

from peer_session import PeerSession


def main() -> int:
    out_dir = sys.argv[1]
    peer = PeerSession("bridge_repeat_probe")
    from labference.srv import FinishEpisode, StartEpisode

    from labference_ros.tasks.weighing.instances import generate

    instance = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]
    start = StartEpisode.Request(episode_id="0000_repeat", instance_json=instance.to_json(), output_dir=out_dir)
    finish = FinishEpisode.Request(episode_id="0000_repeat", reason="deadline", sim_time=1.0)
    answers = {}
    for name, srv, service, request in (("start", StartEpisode, "/policy_bridge/start_episode", start),
                                        ("start_again", StartEpisode, "/policy_bridge/start_episode", start),
                                        ("finish", FinishEpisode, "/policy_bridge/finish_episode", finish),
                                        ("finish_again", FinishEpisode, "/policy_bridge/finish_episode", finish)):
        reply = peer.call(srv, service, request, 120.0)
        answers[name] = [reply.success, reply.message]
    print("PROBE " + json.dumps(answers), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
