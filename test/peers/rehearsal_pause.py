"""Pauses a running rehearsal episode through /policy_bridge/pause once the arm moves,
watches 1.5 sim seconds, resumes, and prints "RESULT <json>": the newest joint state's time
when the pause was answered, the stamps of the episode's arm trajectories seen before the resume was asked, the arm's joints
from then on and the answers. (The bridge's own record of the pause has its exact time.)
usage: rehearsal_pause.py EPISODE_PREFIX (the episode to pause, e.g. 0001_)"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from peer_session import PeerSession


def main() -> int:
    prefix = sys.argv[1]
    peer = PeerSession("rehearsal_pause")
    from labference.srv import SetPause
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory

    from labference_ros.msgconv import stamp_to_s

    joints: list[tuple[float, np.ndarray]] = []
    sent: list[float] = []
    peer.node.create_subscription(JointState, "/joint_states",
                                  lambda m: joints.append((stamp_to_s(m.header.stamp), np.array(m.position[:7]))),
                                  100)
    peer.node.create_subscription(JointTrajectory, "/panda_arm_controller/joint_trajectory",
                                  lambda m: sent.append(stamp_to_s(m.header.stamp)), 100)
    status = peer.bridge_status()
    deadline = time.monotonic() + 300

    def moving() -> bool:
        return (status.get("state") == "running" and str(status.get("episode_id", "")).startswith(prefix)
                and len(joints) > 2 and joints[-1][0] > 1.0 and joints[-1][0] > joints[0][0]
                and np.abs(joints[-1][1] - joints[-2][1]).max() > 1e-4)

    while not str(status.get("episode_id", "")).startswith(prefix) and time.monotonic() < deadline:
        time.sleep(0.01)
    sent.clear()  # earlier episodes' trajectories and joint states: their sim times overlap this one's
    joints.clear()
    while not moving() and time.monotonic() < deadline:
        time.sleep(0.01)
    episode = str(status.get("episode_id", ""))
    pause = peer.call(SetPause, "/policy_bridge/pause", SetPause.Request(episode_id=episode, pause=True,
                                                                         reason="operator"), 60.0)
    paused_at = joints[-1][0]
    while joints[-1][0] < paused_at + 1.5 and time.monotonic() < deadline:
        time.sleep(0.01)
    during = [(t, q.tolist()) for t, q in joints if t >= paused_at]
    # Rows seen before the resume is asked: the bridge stamps its rows with its own view of
    # sim time, which may trail the joint states, so a row after the resume can carry an
    # earlier stamp than the last joint state watched.
    sent_while_paused = list(sent)
    resume = peer.call(SetPause, "/policy_bridge/pause", SetPause.Request(episode_id=episode, pause=False,
                                                                          reason="operator"), 60.0)
    print("RESULT " + json.dumps({"pause": [pause.success, pause.message], "resume": [resume.success, resume.message],
                                  "answered_at": paused_at, "during": during, "sent": sent_while_paused}),
          flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
