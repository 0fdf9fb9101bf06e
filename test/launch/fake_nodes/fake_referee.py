"""Stand-in referee: start/finish services, /referee/scores, scores.json in the episode directory."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fake_common import occupy_topics, best_effort, index_of, indices, sim_seconds

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock

    from labference.msg import ScoreSnapshot
    from labference.srv import FinishEpisode, StartEpisode

    class FakeReferee(Node):
        def __init__(self):
            super().__init__("referee")
            occupy_topics(self, "referee")
            self.now, self.episode, self.started_at, self.out = None, None, None, None
            self.complete = False
            self.create_subscription(Clock, "/clock", self.on_clock, best_effort())
            self.pub = self.create_publisher(ScoreSnapshot, "/referee/scores", 10)
            self.create_service(StartEpisode, "/referee/start_episode", self.on_start)
            self.create_service(FinishEpisode, "/referee/finish_episode", self.on_finish)
            self.create_timer(0.1, self.publish)

        def on_clock(self, msg):
            self.now = sim_seconds(msg)

        def on_start(self, request, response):
            print(f"referee start {request.episode_id} wall {time.time():.3f}", flush=True)
            self.episode, self.started_at, self.complete = request.episode_id, self.now, False
            self.out = Path(request.output_dir)
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "run.json").write_text(request.run_json)
            response.success = True
            return response

        def publish(self):
            if self.episode is None or self.now is None:
                return
            if self.started_at is None:  # started before the first clock reached this node
                self.started_at = self.now
            if index_of(self.episode) in indices("FAKE_COMPLETE") and self.now - self.started_at >= 1.0:
                self.complete = True
            self.pub.publish(ScoreSnapshot(episode_id=self.episode, physically_complete=1 if self.complete else -1))

        def on_finish(self, request, response):
            if request.episode_id != self.episode:
                response.success, response.message = False, f"not the current episode ({self.episode})"
                return response
            index = index_of(request.episode_id)
            scores = {"episode_id": request.episode_id, "finished": request.reason,
                      "first_choice_correct": {0: True, 2: False}.get(index),
                      "physically_complete": self.complete, "valid_complete": self.complete,
                      "completion_class": "clean" if self.complete else "none"}
            (self.out / "scores.json").write_text(json.dumps({"status": request.reason, **scores}))
            self.episode = None
            response.success, response.scores_json = True, json.dumps(scores)
            return response

    return FakeReferee()


if __name__ == "__main__":
    sys.exit(run_node(make))
