"""Stand-in lab_sim: /clock at 5x real time and /lab_sim/reset (sim time keeps running)."""
from __future__ import annotations

import os
import sys

from fake_common import occupy_topics, index_of, indices

from labference_ros.nodes.runtime import run_node

STEP_S = 0.1  # sim seconds per 20 ms tick


def make():
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock

    from labference.srv import ResetEpisode

    class FakeSim(Node):
        def __init__(self):
            super().__init__("lab_sim")
            occupy_topics(self, "lab_sim")
            self.declare_parameter("step_mode", "sync")
            self.t = 0.0
            self.pub = self.create_publisher(Clock, "/clock", 10)
            self.create_service(ResetEpisode, "/lab_sim/reset", self.on_reset)
            self.create_timer(0.02, self.tick)
            print(f"fake lab_sim up, step_mode={self.get_parameter('step_mode').value}", flush=True)

        def tick(self):
            self.t += STEP_S
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = int(self.t), int((self.t % 1.0) * 1e9)
            self.pub.publish(msg)

        def on_reset(self, request, response):
            print(f"reset {request.episode_id}", flush=True)
            if index_of(request.episode_id) in indices("FAKE_SIM_EXIT_AT"):
                print("fake lab_sim crashing on purpose", flush=True)
                os._exit(3)
            response.success, response.sim_time, response.layout_hash = True, self.t, "fake"
            return response

    return FakeSim()


if __name__ == "__main__":
    sys.exit(run_node(make))
