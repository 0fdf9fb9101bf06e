"""Stand-in world_estimator for the real graph: the scene check /world_estimator/reset
refuses FAKE_SETUP_REFUSALS times per episode (naming a misplaced standard), then
accepts; it also plays the rest of a real cell (fake_common "real_cell") and a
/clock for the stand-in referee's completion timing."""
from __future__ import annotations

import os
import sys

from fake_common import occupy_topics

from labference_ros.nodes.runtime import run_node

STEP_S = 0.1  # clock seconds per 20 ms tick


def make():
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock

    from labference.srv import ResetEpisode

    class FakeEstimator(Node):
        def __init__(self):
            super().__init__("world_estimator")
            occupy_topics(self, "real_cell")
            self.refusals = int(os.environ.get("FAKE_SETUP_REFUSALS", "0"))
            self.asked: dict[str, int] = {}
            self.t = 0.0
            self.pub = self.create_publisher(Clock, "/clock", 10)
            self.create_service(ResetEpisode, "/world_estimator/reset", self.on_reset)
            self.create_timer(0.02, self.tick)

        def tick(self):
            self.t += STEP_S
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = int(self.t), int((self.t % 1.0) * 1e9)
            self.pub.publish(msg)

        def on_reset(self, request, response):
            n = self.asked[request.episode_id] = self.asked.get(request.episode_id, 0) + 1
            print(f"scene check {request.episode_id} #{n}", flush=True)
            if n <= self.refusals:
                response.success = False
                response.message = "scene does not match the instance's start: std_10: marker not seen"
                return response
            response.success, response.message, response.layout_hash = True, "scene matches", "fake"
            return response

    return FakeEstimator()


if __name__ == "__main__":
    sys.exit(run_node(make))
