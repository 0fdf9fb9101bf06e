"""Pauses an executing episode through /policy_bridge/pause, then resumes it.
Starts lab_sim, the referee and the bridge as bridge_episode.py does, waits until
the arm moves, pauses, watches 1.5 sim seconds, resumes, waits for the end and
prints "RESULT <json>": the pause's sim time, the trajectories sent after it,
the arm's motion during the pause (1.5 sim s), the final status and scores.
usage: bridge_pause.py OUTPUT_DIR"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from peer_session import PeerSession


def main() -> int:
    out_dir = sys.argv[1]
    peer = PeerSession("bridge_pause")
    from labference.srv import FinishEpisode, ResetEpisode, SetPause, StartEpisode
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory

    from labference_ros.msgconv import stamp_to_s
    from labference_ros.tasks.weighing.instances import generate

    joints: list[tuple[float, np.ndarray]] = []
    sent: list[float] = []
    peer.node.create_subscription(JointState, "/joint_states",
                                  lambda m: joints.append((stamp_to_s(m.header.stamp), np.array(m.position[:7]))),
                                  100)
    peer.node.create_subscription(JointTrajectory, "/panda_arm_controller/joint_trajectory",
                                  lambda m: sent.append(stamp_to_s(m.header.stamp)), 100)
    status = peer.bridge_status()
    instance = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]
    res = peer.call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(episode_id="ep0",
                                                                         instance_json=instance.to_json()), 120.0)
    assert res.success, res.message
    start = StartEpisode.Request(episode_id="ep0", instance_json=instance.to_json(), output_dir=out_dir, run_json="{}")
    assert peer.call(StartEpisode, "/referee/start_episode", start, 120.0).success
    started = peer.call(StartEpisode, "/policy_bridge/start_episode", start, 120.0)
    assert started.success

    def moving() -> bool:
        return len(joints) > 2 and joints[-1][0] > 1.0 and np.abs(joints[-1][1] - joints[-2][1]).max() > 1e-4

    deadline = time.monotonic() + 300
    while not moving() and time.monotonic() < deadline:
        time.sleep(0.01)
    pause = peer.call(SetPause, "/policy_bridge/pause", SetPause.Request(episode_id="ep0", pause=True,
                                                                         reason="operator"), 60.0)
    paused_at = joints[-1][0]
    while joints[-1][0] < paused_at + 1.5 and time.monotonic() < deadline:
        time.sleep(0.01)
    during = [(t, q.tolist()) for t, q in joints if t >= paused_at]
    sent_after = [t for t in sent if t > paused_at + 1e-9]
    resume = peer.call(SetPause, "/policy_bridge/pause", SetPause.Request(episode_id="ep0", pause=False,
                                                                          reason="operator"), 60.0)
    while time.monotonic() < deadline and not (status.get("episode_id") == "ep0"
                                               and status.get("state") in ("done", "error")):
        time.sleep(0.05)
    res = peer.call(FinishEpisode, "/referee/finish_episode", FinishEpisode.Request(
        episode_id="ep0", reason="completed", sim_time=0.0), 120.0)
    print("RESULT " + json.dumps({"pause": [pause.success, pause.message], "resume": [resume.success, resume.message],
                                  "paused_at": paused_at, "during": during, "sent_during_pause": sent_after,
                                  "status": status, "scores": json.loads(res.scores_json or "{}"),
                                  "profile": json.loads(started.message)["policy"]}), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
