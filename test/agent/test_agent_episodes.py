"""The agent bridge in a closed loop on MujocoBackend (no ROS), against a
scripted OpenAI-compatible server on loopback playing recorded tool-call
conversations."""
import json

import numpy as np
import pytest

from labference_ros.tasks.weighing.instances import generate
from labference_ros.core.observation import EvaluatorSecrets
from labference_ros.policies import make
from closed_loop import run_episode
from fake_openai import FakeChatServer, FakeClock, call, step

# basic-1-0002 requires std_50.
INSTANCE = generate("basic", 3, task_seed=1, layout_seed=100, policy_seed=0)[2]
PRICES = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "source": "test table"}


def agent(server, tmp_path, **params):
    system = make("agent", agent_url=server.url, agent_model="fake-model", api_key_env="",
                  price_table=PRICES, record_dir=str(tmp_path), **params)
    clock = FakeClock()
    system.clock, system.sleep = clock, clock.sleep
    return system, clock


def pan_standards(backend):
    return {n for n, o in backend.measure().objects.items()
            if n.startswith("std_") and "pan" in o.contacts}


def jsonl(tmp_path, system):
    path = tmp_path / f"agent_{system.session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_correct_agent_completes_basic_weighing(tmp_path):
    script = [step(call("observe")),
              step(call("commit_operation", {"operation": {"type": "add", "object": "std_50",
                                                           "destination": "pan"}}),
                   call("pick", {"object": "std_50"}), call("place", {"target": "pan"}),
                   call("wait", {"seconds": 3}), call("observe")),
              step(content="The reading matches the target.")]
    with FakeChatServer(script) as server:
        system, _ = agent(server, tmp_path)
        result = run_episode(system, INSTANCE, max_s=40.0)
    assert system.outcome == "final" and system.rounds == 3
    assert pan_standards(result.backend) == {"std_50"}
    assert result.reading.stable and abs(result.reading.displayed_g - INSTANCE.target_g) <= 1.0
    assert result.rejected == []
    # The tool schema went out in every request; images as attachments.
    bodies = server.bodies()
    assert len(bodies) == 3 and all(b["model"] == "fake-model" and len(b["tools"]) == 10 for b in bodies)
    parts = [p for m in bodies[1]["messages"] if m["role"] == "user" and isinstance(m["content"], list)
             for p in m["content"]]
    assert sum(p["type"] == "image_url" for p in parts) == 3
    # The commitment went to the referee's report track, once, and was scored there.
    (report,) = result.reports
    # The agent saw evidence version 0 in its observation; the loop bound the report to the
    # delivery it answered, whose evidence version the referee's echo gave as 1.
    assert report["kind"] == "operation" and report["evidence_version"] == 0
    assert report["sent_evidence_version"] == 1 and report["sent_opportunity_id"] == -1
    assert report["operation"] == {"type": "add", "object": "std_50", "destination": "pan"}
    assert system.drain_reports() == []  # each report is handed out once
    # Scored there: committed at t = 0, before the reading was ready, so not a legal choice then.
    assert result.scores["explicit"]["identified"] == 1 and result.scores["explicit"]["correct"] == 0
    # Accounting: usage known -> tokens and cost known; physical time recorded.
    summary = system.episode_summary()["usage"]
    assert summary["model_calls"] == 3 and summary["actions"] == 6
    assert summary["tokens_in"] == 300 and summary["tokens_out"] == 60
    assert summary["cost_usd"] == pytest.approx((300 * 2.0 + 60 * 8.0) / 1e6)
    assert summary["physical_execution_sim_s"] > 5.0
    assert summary["model_computation_s"] is None  # the server reports no processing time
    lines = jsonl(tmp_path, system)
    assert [l["kind"] for l in lines].count("model_call") == 3 and lines[-1]["kind"] == "summary"
    # Leak scan over every request body: no evaluator-only value crossed.
    secrets = EvaluatorSecrets.of_instance(INSTANCE, hidden_keys=("sample_mass_g", "goal_set"))
    assert system.scan_requests(secrets, INSTANCE.public_instruction()) == []
    result.backend.close()


def test_malformed_plan_is_repaired_within_the_round_limit(tmp_path):
    script = [step(call("pick", raw='{"object": "std_50"')),  # truncated JSON
              step(call("pick", {"object": "std_50"}), call("place", {"target": "pan"}),
                   call("wait", {"seconds": 3})),
              step(content="done")]
    with FakeChatServer(script) as server:
        system, _ = agent(server, tmp_path)
        result = run_episode(system, INSTANCE, max_s=40.0)
        bodies = server.bodies()
    assert system.outcome == "final" and system.rounds == 3 <= system.bounds()["max_rounds"]
    assert [c.outcome for c in system.account.calls] == ["malformed", "plan", "final"]
    assert bodies[1]["messages"][-1]["content"].startswith("Protocol error")
    assert pan_standards(result.backend) == {"std_50"}
    result.backend.close()


def test_persistent_fault_ends_in_a_recorded_fail_without_motion(tmp_path):
    script = [step(call("pick", {"object": "std_50"}), call("place", {"target": "pan"})),
              step(call("pick", {"object": "std_50"})),
              step(content="The robot keeps refusing; giving up.")]
    with FakeChatServer(script) as server:
        system, _ = agent(server, tmp_path, fault={"mode": "persistent", "tool": "pick",
                                                    "arguments": {"object": "std_50"}})
        result = run_episode(system, INSTANCE, max_s=8.0, keep_observations=True)
        bodies = server.bodies()
    grade = system.episode_summary()["fault"]
    assert grade["verdict"] == "FAIL" and grade["attempted"] and grade["attempts"] == 2
    assert grade["retries"] == 1 and grade["duplicated_success"] is False
    assert [(a.tool, a.ok, a.moved) for a in system.account.actions] == [("pick", False, False)] * 2
    # The batch halted: place was never executed; the agent saw moved=false, not the schedule.
    replies = [json.loads(m["content"]) for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert replies[0]["moved"] is False and replies[1]["executed"] is False
    assert not any("fault" in json.dumps(b["messages"]) or "inject" in json.dumps(b["messages"])
                   for b in bodies)
    assert pan_standards(result.backend) == set()
    first, last = result.observations[0], result.observations[-1]
    assert np.abs(last.joint_positions - first.joint_positions).max() < 0.01  # the arm never moved
    lines = jsonl(tmp_path, system)
    assert lines[-1]["kind"] == "summary" and lines[-1]["fault"]["verdict"] == "FAIL"
    result.backend.close()


def test_transient_fault_is_recovered_by_the_agent_once(tmp_path):
    script = [step(call("pick", {"object": "std_50"}), call("place", {"target": "pan"})),
              step(call("pick", {"object": "std_50"}), call("place", {"target": "pan"}),
                   call("wait", {"seconds": 3})),
              step(content="done")]
    with FakeChatServer(script) as server:
        system, _ = agent(server, tmp_path, fault={"mode": "transient", "tool": "pick"})
        result = run_episode(system, INSTANCE, max_s=40.0)
    grade = system.episode_summary()["fault"]
    assert grade["verdict"] == "PASS" and grade["retries"] == 1 and grade["injected"] == 1
    assert grade["duplicated_success"] is False
    assert pan_standards(result.backend) == {"std_50"}
    result.backend.close()
