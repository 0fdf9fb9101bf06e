"""Stand-in policy_bridge: start/finish services and /policy_bridge/status JSON; in the
episodes FAKE_GRASP names, a grasp command at start (a system that ends holding);
/policy_bridge/pause prints each call, and in the episodes FAKE_DONE_AFTER_RESUME names
the system reports done once resumed."""
from __future__ import annotations

import json
import os
import sys
import time

from fake_common import occupy_topics, best_effort, index_of, indices, sim_seconds

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import String

    from labference.msg import GripperCommand
    from labference.srv import FinishEpisode, SetPause, StartEpisode

    class FakeBridge(Node):
        def __init__(self):
            super().__init__("policy_bridge")
            occupy_topics(self, "policy_bridge")
            self.declare_parameter("system", "")
            self.now, self.episode, self.started_at, self.state = None, None, None, "idle"
            self.last_start = None
            self.create_subscription(Clock, "/clock", self.on_clock, best_effort())
            self.pub = self.create_publisher(String, "/policy_bridge/status", 10)
            self.gripper = self.create_publisher(GripperCommand, "/panda_gripper/command", 10)
            self.create_service(StartEpisode, "/policy_bridge/start_episode", self.on_start)
            self.create_service(FinishEpisode, "/policy_bridge/finish_episode", self.on_finish)
            self.create_service(SetPause, "/policy_bridge/pause", self.on_pause)
            self.create_timer(0.1, self.publish)
            print(f"fake policy_bridge up, system={self.get_parameter('system').value}", flush=True)

        def on_clock(self, msg):
            self.now = sim_seconds(msg)

        def on_start(self, request, response):
            if request.episode_id == self.last_start:  # asked again: answered at once, as the bridge does
                response.success = True
                return response
            self.last_start = request.episode_id
            if index_of(request.episode_id) in indices("FAKE_BRIDGE_HANG"):
                time.sleep(float(os.environ.get("FAKE_HANG_S", "4")))  # a stuck tested system
            self.episode, self.started_at, self.state = request.episode_id, self.now, "running"
            response.success = True
            return response

        def publish(self):
            if self.episode is None or self.now is None or self.started_at is None:
                return
            if index_of(self.episode) in indices("FAKE_BRIDGE_DONE") and self.now - self.started_at >= 1.0:
                self.state = "done"
            if self.state == "running" and index_of(self.episode) in indices("FAKE_GRASP"):
                # Said again at each tick, as a policy holds its command (the hand's bridge sends it once).
                self.gripper.publish(GripperCommand(grasp=True, width=0.03, speed=0.05, force=20.0,
                                                    epsilon_inner=0.005, epsilon_outer=0.005))
            self.pub.publish(String(data=json.dumps({"episode_id": self.episode, "state": self.state,
                                                     "reason": "fake"})))

        def on_pause(self, request, response):
            print(f"bridge {'pause' if request.pause else 'resume'} {request.episode_id} {request.reason}", flush=True)
            if request.episode_id != self.episode:
                response.success, response.message = False, f"no running episode {request.episode_id!r}"
                return response
            if not request.pause and index_of(self.episode) in indices("FAKE_DONE_AFTER_RESUME"):
                self.state = "done"
            response.success, response.message = True, "paused" if request.pause else "running"
            return response

        def on_finish(self, request, response):
            print(f"finish {request.episode_id} {request.reason}", flush=True)
            # As the real bridge does, the episode's end state once more (the arm's nodes read it).
            self.pub.publish(String(data=json.dumps({"episode_id": request.episode_id, "state": "done",
                                                     "reason": "finished"})))
            self.episode, self.state = None, "idle"
            response.success = True
            return response

    return FakeBridge()


if __name__ == "__main__":
    sys.exit(run_node(make))
