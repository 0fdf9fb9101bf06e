"""Runs one episode through policy_bridge: resets lab_sim, starts the referee
and the bridge, waits for the bridge's status to leave "running", finishes
the referee and prints "RESULT <json>".
usage: bridge_episode.py OUTPUT_DIR INSTANCE_INDEX"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


def main() -> int:
    out_dir, index = sys.argv[1], int(sys.argv[2])
    peer = PeerSession("bridge_episode")
    from labference.srv import FinishEpisode, ResetEpisode, StartEpisode

    from labference_ros.tasks.weighing.instances import generate

    status = peer.bridge_status()
    instance = generate("basic", index + 1, task_seed=1, layout_seed=100, policy_seed=0)[index]
    res = peer.call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(episode_id="ep0",
                                                                         instance_json=instance.to_json()), 120.0)
    assert res.success, res.message
    start = StartEpisode.Request(episode_id="ep0", instance_json=instance.to_json(), output_dir=out_dir, run_json="{}")
    res = peer.call(StartEpisode, "/referee/start_episode", start, 120.0)
    assert res.success, res.message
    res = peer.call(StartEpisode, "/policy_bridge/start_episode", start, 120.0)
    assert res.success, res.message
    profile = json.loads(res.message)["policy"]
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not (status.get("episode_id") == "ep0"
                                               and status.get("state") in ("done", "error")):
        time.sleep(0.05)
    res = peer.call(FinishEpisode, "/referee/finish_episode", FinishEpisode.Request(
        episode_id="ep0", reason="completed", sim_time=0.0), 120.0)
    print("RESULT " + json.dumps({"status": status, "profile": profile, "goal_set": instance.goal_set,
                                  "scores": json.loads(res.scores_json or "{}")}), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
