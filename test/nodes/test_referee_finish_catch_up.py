"""A referee's finish waits until the episode's measurements are in. A reading DDS
delivers late (resent at the writer's next heartbeat, seen in CI when the balance
shared lab_sim's process) would otherwise be missing from the finished episode, and
reach the referee after the next episode started: sim time starts again at each
reset, so the old reading passed for the new episode's future, and its world states
went out without their readings ("no_reading" at 0 s)."""
from __future__ import annotations

import json
import pathlib
import sys

import pytest
from ros_domains import own_domain
from rosproc import Proc

from labference_ros.rosenv import loopback_environ

PEERS = pathlib.Path(__file__).resolve().parents[1] / "peers"

# The test's publisher and service client. Episode 1 gets world states at 0..30 ms
# and readings at 0..20 ms; its finish is asked for (at 40 ms) with the world state at
# 40 ms and the readings at 30 and 40 ms still held back. "wait": they are sent while
# the finish is pending (it must still be 0.5 s later). "no_wait" (finish_timeout_s 0):
# the finish is answered first, and they are sent after episode 2 has started, as a
# late resend would arrive.
PROBE = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from peer_session import PeerSession
peer = PeerSession("finish_catch_up_probe")
from labference.srv import FinishEpisode, StartEpisode
from labference_ros.tasks.weighing.instances import generate
from referee_feed import MeasurementFeed

out_dir, mode = sys.argv[1], sys.argv[3]
feed = MeasurementFeed(peer)
world, reading = feed.world, feed.reading
instance = generate("basic", 1, task_seed=3, layout_seed=3, policy_seed=0)[0]

def held_back():
    world(4)
    reading(3)
    reading(4)

def start(episode):
    answer = peer.call(StartEpisode, "/referee/start_episode", StartEpisode.Request(
        episode_id=episode, instance_json=instance.to_json(), output_dir=f"{out_dir}/{episode}"))
    assert answer.success, answer.message

def finish(episode, sim_time):
    return peer.client(FinishEpisode, "/referee/finish_episode").call_async(
        FinishEpisode.Request(episode_id=episode, reason="timeout", sim_time=sim_time))

start("ep1")
for k in range(4):
    world(k)
    if k < 3:
        reading(k)
finishing = finish("ep1", 0.04)
if mode == "wait":
    time.sleep(0.5)
    pending = not finishing.done()
    held_back()
answer = peer.wait(finishing, 30.0)
assert answer is not None and answer.success, answer
start("ep2")
if mode == "no_wait":
    pending = False
    held_back()
    time.sleep(0.2)
for k in range(2):
    world(k)
    time.sleep(0.2)
    reading(k)
    time.sleep(0.2)
answer = peer.wait(finish("ep2", 0.01), 30.0)
assert answer is not None and answer.success, answer
print("PROBE " + json.dumps({"pending": pending}), flush=True)
"""


def no_reading_times(events: list[dict]) -> list[float]:
    return [e["t"] for e in events if e["category"] == "validity" and e["detail"].get("reason") == "no_reading"]


def episode_events(out_dir, episode: str) -> list[dict]:
    lines = (out_dir / episode / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["record"] == "event"]


def clean_start(events: list[dict]) -> bool:
    start = next(e for e in events if e["category"] == "episode_start")
    return start["t"] == 0.0 and start["detail"]["reading_ready"] is True and not no_reading_times(events)


@pytest.mark.parametrize("mode", ["wait", "no_wait"])
def test_a_finish_waits_for_measurements_still_in_flight(tmp_path, mode):
    finish_timeout_s = 5.0 if mode == "wait" else 0.0
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        referee = Proc([sys.executable, "-m", "labference_ros.nodes.referee", "--ros-args",
                        "-p", f"finish_timeout_s:={finish_timeout_s}", "-p", "match_timeout_s:=1.0"], env=env)
        probe = Proc([sys.executable, "-c", PROBE, str(tmp_path), str(PEERS), mode], env=env)
        try:
            line = probe.wait_for("PROBE ", timeout=120)
            assert line, probe.seen[-20:]
        finally:
            probe.stop()
            referee.stop()
    pending = json.loads(line[0].split(" ", 1)[1])["pending"]
    first, second = episode_events(tmp_path, "ep1"), episode_events(tmp_path, "ep2")
    first_end = next(e for e in first if e["category"] == "episode_end")
    if mode == "wait":
        assert pending  # the finish waited for the world state at its own time and both readings
        assert no_reading_times(first) == [] and first_end["t"] == pytest.approx(0.04)
        assert clean_start(second)
    else:
        # Not waiting reproduces both failures: episode 1 ends without its last readings
        # (the invalid window they leave opens at 30 ms), and episode 2 takes the old
        # measurements for its own: it does not start clean at 0 s with a reading.
        assert no_reading_times(first) == [pytest.approx(0.03)]
        assert not clean_start(second)
