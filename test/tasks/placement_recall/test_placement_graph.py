"""Placement recall end to end: `labference launch placement_recall_sim.launch.py` with the
real nodes, each in its own process, over fixed seed lists (extended, seeds 0 and 4: in
each, the rack stays in one instance and turns 180 degrees in the other).

Expectations, per system: the scripted expert and the pixel-based memory system
(label_memory_pixels, not privileged) retrieve the tube they placed in both episodes, also
after the half turn (the world-position system, right where the rack stayed and wrong
exactly where it moved, runs from common placements in test_placement_checkpoints.py);
the pixel-based cap-colour system
(cap_colour_pixels) is right in distinct-cap episodes (at chance in same-cap ones:
test_placement_systems.py). The
occluder's frames are blank, no observation after the transition carries an older
image, and the replay audit agrees and finds a bag whose transition was removed."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
TEST_ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def launch(out: pathlib.Path, *args: str, seed: int = 0) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a domain
    env.setdefault("MUJOCO_GL", "egl")
    proc = subprocess.run([LABFERENCE, "launch", "placement_recall_sim.launch.py", f"output_dir:={out}",
                           f"seed:={seed}", "episodes:=2", *args], capture_output=True, text=True, timeout=1500,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]


def episode_files(out: pathlib.Path, attempt: dict) -> tuple[dict, dict, pathlib.Path]:
    episode = out / "episodes" / attempt["episode_id"]
    return (json.loads((episode / "scores.json").read_text()), json.loads((episode / "run.json").read_text()),
            episode)


def events(episode: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in (episode / "events.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("placement") / "expert"
    return out, launch(out, "condition:=extended-same", "record:=true")


def test_the_expert_retrieves_its_tube_whether_or_not_the_rack_turned(expert_run):
    out, attempts = expert_run
    movements = []
    for a in attempts:
        s, run, _ = episode_files(out, a)
        movements.append(run["instance"]["movement"])
        assert s["physically_complete"] and s["placement"]["placed_hole"], s
        assert s["retrieval"]["correct"] is True and s["retrieval"]["chosen_hole"] == s["placement"]["placed_hole"]
        assert run["observation"]["history_protocol"].startswith("online_once")
        assert run["task"]["contract_id"] == "placement_recall.extended-same@0.3.0"
    assert sorted(movements) == ["none", "rotate_180"]  # the seed list holds one of each


def test_blank_frames_while_occluded_and_no_older_image_after_the_transition(expert_run):
    from labference_ros.recording.bag_reader import EpisodeBagReader

    out, attempts = expert_run
    for a in attempts:
        _, _, episode = episode_files(out, a)
        (transition,) = [e for e in events(episode) if e.get("category") == "environment_transition"]
        t0, until = transition["t"], transition["detail"]["occluded_until"]
        assert transition["detail"]["valid"] is True, transition
        # Leak scan over what the tested system was sent: every observation from the
        # transition on carries images taken at or after it.
        sent = [json.loads(line) for line in (episode / "policy_actions.jsonl").read_text().splitlines()]
        after = [r for r in sent if r.get("kind") == "observation" and r["sim_time"] >= t0 - 1e-9]
        assert after and all(min(r["camera_stamps"].values()) >= t0 - 1e-9 for r in after), after[:3]
        assert any(r["sim_time"] < until for r in after)  # the system was asked during the occlusion
        blank, fresh = [], []
        for _topic, _log_ns, msg in EpisodeBagReader(episode / "bag").messages({"/cameras/front/image_raw"}):
            t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            pixels = np.frombuffer(bytes(msg.data), np.uint8)
            if t0 - 1e-9 <= t < until - 1e-9:
                blank.append(not pixels.any())
            elif t >= until:
                fresh.append(bool(pixels.any()))
        assert blank and all(blank) and fresh and all(fresh)


def test_the_audit_agrees_and_finds_a_bag_without_its_transition(expert_run, tmp_path):
    out, attempts = expert_run
    res = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert all(f"{a['episode_id']}: agree" in res.stdout for a in attempts), res.stdout

    sys.path.insert(0, str(TEST_ROOT / "recording"))
    from bag_edit import tampered_copy
    from rclpy.serialization import deserialize_message, serialize_message

    from labference.msg import WorldState

    def forget_the_transition(topic, msgtype, t, data):
        if topic != "/evaluator/world_state":
            return data
        msg = deserialize_message(data, WorldState)
        msg.environment_json = ""
        return serialize_message(msg)

    episode = out / "episodes" / attempts[1]["episode_id"]
    tampered = tampered_copy(episode, tmp_path / episode.name, forget_the_transition)
    res = subprocess.run([LABFERENCE, "audit", str(tampered)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "DISAGREE" in res.stdout and "Traceback" not in res.stdout + res.stderr


def test_the_pixel_memory_system_is_right_whether_or_not_the_rack_turned(tmp_path):
    # label_memory_pixels sees the rack and the caps in the front camera's pixels alone. From
    # 320 x 240 frames its insertion is off by about 2 mm, and a tube has 3.5 mm of play in a
    # hole: about one insertion in ten misses (seed 0's first instance is one), so this seed
    # list (seed 4: a still rack, then a half turn) is one where both insertions land, with
    # errors under 1 mm (docs/placement_recall.md). world_position against it, from common
    # placements with and without the turn: test_placement_checkpoints.py.
    memory = launch(tmp_path / "memory", "condition:=extended-same", "system:=label_memory_pixels", "record:=false",
                    seed=4)
    assert len(memory) == 2
    movements = []
    for m in memory:
        sm, run, _ = episode_files(tmp_path / "memory", m)
        assert run["policy"]["privileged"] is False
        assert sm["retrieval"]["correct"] is True and sm["physically_complete"], sm
        movements.append(run["instance"]["movement"])
    assert sorted(movements) == ["none", "rotate_180"]  # the seed list holds one of each


def test_cap_colour_from_pixels_is_right_in_distinct_cap_episodes(tmp_path):
    # cap_colour_pixels keeps only the cap colour it saw on the tube it picked and reaches for
    # a cap of that colour in the rack after the occlusion: with one tube per colour, right
    # whether or not the rack turned. Seed 4 again: both insertions land (seed 0's miss).
    attempts = launch(tmp_path / "caps", "condition:=extended-distinct", "system:=cap_colour_pixels", "record:=false",
                      seed=4)
    movements = []
    for a in attempts:
        s, run, _ = episode_files(tmp_path / "caps", a)
        assert run["instance"]["caps"] == "distinct" and run["policy"]["privileged"] is False
        assert s["retrieval"]["correct"] is True and s["physically_complete"], s
        movements.append(run["instance"]["movement"])
    assert sorted(movements) == ["none", "rotate_180"]
