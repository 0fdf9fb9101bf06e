"""The referee's start and finish are idempotent. A service reply that Fast DDS drops
(docs/pitfalls.md) leaves the caller without an answer; asking again must not start
the episode anew (dropping what it scored) nor fail a finish that was scored."""
from __future__ import annotations

import json
import pathlib
import sys

from ros_domains import own_domain
from rosproc import Proc

from labference_ros.rosenv import loopback_environ

PEERS = pathlib.Path(__file__).resolve().parents[1] / "peers"

# Starts ep1 twice, sends world states and readings at 0..40 ms, finishes twice at once (the
# second while the first may still be waiting), then once more after both answered, and
# starts it once more after the finish.
PROBE = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from peer_session import PeerSession
peer = PeerSession("repeated_calls_probe")
from labference.srv import FinishEpisode, StartEpisode
from labference_ros.tasks.weighing.instances import generate
from referee_feed import MeasurementFeed

out_dir = sys.argv[1]
feed = MeasurementFeed(peer)
instance = generate("basic", 1, task_seed=3, layout_seed=3, policy_seed=0)[0]

def start(episode, inst):
    return peer.call(StartEpisode, "/referee/start_episode", StartEpisode.Request(
        episode_id=episode, instance_json=inst.to_json(), output_dir=f"{out_dir}/{episode}"))

def finish():
    return peer.client(FinishEpisode, "/referee/finish_episode").call_async(
        FinishEpisode.Request(episode_id="ep1", reason="timeout", sim_time=0.04))

answers = {"start": [], "finish": []}
for _ in range(2):
    a = start("ep1", instance)
    answers["start"].append([a.success, a.message])
for k in range(5):
    feed.world(k)
    feed.reading(k)
first, second = finish(), finish()
for f in (first, second):
    a = peer.wait(f, 30.0)
    answers["finish"].append([a.success, a.message, a.scores_json])
a = peer.wait(finish(), 30.0)
answers["finish"].append([a.success, a.message, a.scores_json])
a = start("ep1", instance)  # a copy of the start that arrives after the finish
answers["late_start"] = [a.success, a.message]
print("PROBE " + json.dumps(answers), flush=True)
"""


def test_a_repeated_start_or_finish_gets_the_first_answer_and_scores_once(tmp_path):
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        referee = Proc([sys.executable, "-m", "labference_ros.nodes.referee", "--ros-args",
                        "-p", "match_timeout_s:=1.0"], env=env)
        probe = Proc([sys.executable, "-c", PROBE, str(tmp_path), str(PEERS)], env=env)
        try:
            line = probe.wait_for("PROBE ", timeout=120)
            assert line, probe.seen[-20:]
        finally:
            probe.stop()
            referee.stop()
    answers = json.loads(line[0].split(" ", 1)[1])
    (first_start, again) = answers["start"]
    assert first_start[0] and first_start[1].startswith("scoring ep1"), first_start
    assert again == [True, "already scoring ep1"]
    finishes = answers["finish"]
    assert all(f[0] for f in finishes), finishes
    assert finishes[0][2] and finishes[1][2] == finishes[0][2] and finishes[2][2] == finishes[0][2]
    events = [json.loads(line) for line in (tmp_path / "ep1" / "events.jsonl").read_text().splitlines()]
    categories = [e.get("category") for e in events if e.get("record") == "event"]
    assert categories.count("episode_start") == 1 and categories.count("episode_end") == 1, categories
    start = next(e for e in events if e.get("category") == "episode_start")
    assert start["t"] == 0.0  # the repeated start did not open the episode again after its first measurements
    # A start repeated after the finish reopens nothing: the finished episode's records stay.
    assert answers["late_start"] == [False, "ep1 was already scored; its records stay as they are"]
    scores = json.loads((tmp_path / "ep1" / "scores.json").read_text())
    assert scores.get("status") == "timeout" and json.loads(finishes[0][2])["episode_id"] == "ep1"  # the finish reason
