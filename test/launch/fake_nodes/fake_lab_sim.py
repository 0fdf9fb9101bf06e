"""Stand-in lab_sim: /clock at 5x real time and /lab_sim/reset (sim time keeps running)."""
from __future__ import annotations

import os
import sys

from fake_common import index_of, indices, occupy_topics, start_clock

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node

    from labference.srv import ResetEpisode

    class FakeSim(Node):
        def __init__(self):
            super().__init__("lab_sim")
            occupy_topics(self, "lab_sim")
            self.declare_parameter("step_mode", "sync")
            start_clock(self)
            self.create_service(ResetEpisode, "/lab_sim/reset", self.on_reset)
            print(f"fake lab_sim up, step_mode={self.get_parameter('step_mode').value}", flush=True)

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
