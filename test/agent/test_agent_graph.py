"""system:=agent in the real graph (`labference launch`), against the scripted
OpenAI-compatible server on loopback: the same referee scores its native choice
and, on the separate explicit track, its commitment."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from labference_ros.core.instances import generate, write_instance_list
from fake_openai import FakeChatServer, call, step

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
INSTANCE = generate("basic", 3, task_seed=1, layout_seed=100, policy_seed=0)[2]  # requires std_50


@pytest.mark.slow
def test_agent_runs_in_the_graph_and_its_commitment_is_scored(tmp_path):
    assert INSTANCE.goal_set == ("std_50",)
    instances = tmp_path / "instances.json"
    write_instance_list(instances, [INSTANCE])
    # The agent waits for a stable reading before committing: at t = 0 only Wait is legal.
    script = [step(call("wait", {"seconds": 2}), call("observe")),
              step(call("commit_operation", {"operation": {"type": "add", "object": "std_50",
                                                           "destination": "pan"}}),
                   call("pick", {"object": "std_50"}), call("place", {"target": "pan"}),
                   call("wait", {"seconds": 4}), call("observe")),
              step(content="The reading matches the target.")]
    out = tmp_path / "run"
    with FakeChatServer(script) as server:
        proc = subprocess.run(
            [LABFERENCE, "launch", "weighing_sim.launch.py", "system:=agent", f"agent_url:={server.url}",
             "agent_model:=fake-model", 'system_params:={"api_key_env": ""}', f"instances:={instances}",
             "record:=false", f"output_dir:={out}"], capture_output=True, text=True, timeout=900)
        bodies = server.bodies()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (attempt,) = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    s = attempt["scores"]
    assert attempt["status"] == "ok", attempt.get("errors")
    assert s["first_choice_correct"] is True and s["executed"] is True and s["valid_complete"] is True
    assert s["explicit"]["identified"] == 1 and s["explicit"]["correct"] == 1
    # The episode may end (task complete) before the agent's closing message.
    assert len(bodies) >= 2 and all(b["model"] == "fake-model" for b in bodies)
    run = json.loads((out / "episodes" / attempt["episode_id"] / "run.json").read_text())
    assert run["policy"]["name"] == "agent"
