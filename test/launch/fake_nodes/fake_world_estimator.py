"""Stand-in world_estimator for the real graph: the scene check /world_estimator/reset
refuses FAKE_SETUP_REFUSALS times per episode (naming a misplaced standard), then
accepts (with FAKE_SETUP_UNTIL_FILE: refuses until that file exists, an operator's set-up
the test does by creating it); with FAKE_SETUP_SILENT_S it answers an episode's first check only that many
seconds late (a reply the runner never gets, as when Fast DDS drops it); it also plays the rest of a real cell (fake_common "real_cell") and a
/clock for the stand-in referee's completion timing."""
from __future__ import annotations

import os
import sys
import time

from fake_common import occupy_topics, start_clock

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node

    from labference.srv import ResetEpisode

    class FakeEstimator(Node):
        def __init__(self):
            super().__init__("world_estimator")
            occupy_topics(self, "real_cell")
            self.refusals = int(os.environ.get("FAKE_SETUP_REFUSALS", "0"))
            self.asked: dict[str, int] = {}
            start_clock(self)
            self.create_service(ResetEpisode, "/world_estimator/reset", self.on_reset)

        def on_reset(self, request, response):
            n = self.asked[request.episode_id] = self.asked.get(request.episode_id, 0) + 1
            print(f"scene check {request.episode_id} #{n}", flush=True)
            if n == 1 and os.environ.get("FAKE_SETUP_SILENT_S"):
                time.sleep(float(os.environ["FAKE_SETUP_SILENT_S"]))
            until = os.environ.get("FAKE_SETUP_UNTIL_FILE")
            if n <= self.refusals or (until and not os.path.exists(until)):
                response.success = False
                response.message = "scene does not match the instance's start: std_10: marker not seen"
                return response
            response.success, response.message, response.layout_hash = True, "scene matches", "fake"
            return response

    return FakeEstimator()


if __name__ == "__main__":
    sys.exit(run_node(make))
