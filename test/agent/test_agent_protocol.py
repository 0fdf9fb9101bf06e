"""Protocol bounds, the client and accounting, driven by single policy
observations from the simulator (no motion needed) and a scripted server."""
import json
import threading

import numpy as np
import pytest

from labference_ros.core.observation import EvaluatorSecrets
from labference_ros.policies import EvaluationValidityError, make
from labference_ros.policies.agent.tools import JSON_CONTRACT, TOOLS, check_call, schema_hash
from fake_openai import FakeChatServer, FakeClock, call, step
from sim_observation import settled_observation

OVERLOAD = b'{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}'


@pytest.fixture(scope="module")
def observed():
    instance, obs, _ = settled_observation(index=3)
    return instance, obs


def agent(server, **params):
    params.setdefault("api_key_env", "")
    system = make("agent", agent_url=server.url, agent_model="fake-model", **params)
    clock = FakeClock()
    system.clock, system.sleep = clock, clock.sleep
    system.reset("s-1", 0)
    return system, clock


def test_registry_profile_records_schema_bounds_model_and_prices():
    system = make("agent", agent_model="m", price_table={"input_per_mtok": 1.0, "output_per_mtok": 2.0},
                  max_rounds=4, fault={"mode": "persistent", "tool": "pick"})
    prof = json.loads(json.dumps(system.profile()))
    assert prof["name"] == "agent" and prof["privileged"] is False
    a = prof["agent"]
    assert a["model"] == "m" and a["tool_schema_hash"] == schema_hash() and len(a["tools"]) == 10
    assert a["bounds"]["max_rounds"] == 4 and a["bounds"]["max_actions"] == 24
    assert a["bounds"]["turn_deadline_s"] == 90.0 and a["bounds"]["executor_retries"] == 0
    assert a["price_table"] == {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    assert "fault" not in prof["params"]  # the schedule is evaluator-side
    with pytest.raises(ValueError):
        make("agent")  # no model named
    with pytest.raises(ValueError):
        make("agent", agent_model="m", fault={"mode": "sometimes"})


def test_schema_hash_changes_with_the_schema_and_calls_are_checked():
    changed = json.loads(json.dumps(TOOLS))
    changed[0]["function"]["description"] += "!"
    assert schema_hash(changed) != schema_hash()
    assert check_call("pick", '{"object": "std_50"}') == ({"object": "std_50"}, None)
    for name, raw in (("pick", '{"object": std_50'), ("pick", '{"object": "std_7"}'),
                      ("pick", "{}"), ("fly", "{}"), ("wait", '{"seconds": "two"}'),
                      ("move_to_pose", '{"x": 0, "y": 0, "z": 0, "w": 1}')):
        args, err = check_call(name, raw)
        assert args is None and err


def test_malformed_plans_get_protocol_feedback_and_consume_rounds(observed):
    _, obs = observed
    script = [step(call("pick", raw='{"object": std_100')) for _ in range(6)] + [step(content="never asked")]
    with FakeChatServer(script) as server:
        system, _ = agent(server)
        chunk = system.act(obs)
        bodies = server.bodies()
    assert system.finished and system.outcome == "round_limit" and system.rounds == 6
    assert len(bodies) == 6 and system.account.actions == []
    assert [c.outcome for c in system.account.calls] == ["malformed"] * 6
    feedback = bodies[1]["messages"][-1]
    assert feedback["role"] == "user" and feedback["content"].startswith("Protocol error")
    assert obs.instruction in feedback["content"] and JSON_CONTRACT in feedback["content"]
    tool_reply = bodies[1]["messages"][-2]
    assert tool_reply["role"] == "tool" and "protocol error" in tool_reply["content"]
    # Nothing moved: the chunk holds the measured arm pose.
    assert np.allclose(chunk[:, :7], obs.joint_positions)


def test_deadline_stops_dispatch_and_the_late_call_is_charged(observed):
    _, obs = observed
    holder = {}
    script = [step(call("observe")),
              step(call("pick", {"object": "std_100"}), call("place", {"target": "pan"}),
                   on_request=lambda: holder["clock"].advance(120.0)),
              step(content="unused")]
    with FakeChatServer(script) as server:
        system, clock = agent(server)
        holder["clock"] = clock
        chunk = system.act(obs)
        bodies = server.requests
    assert system.finished and system.outcome == "deadline" and len(bodies) == 2
    assert [a.tool for a in system.account.actions] == ["observe"]  # pick never dispatched
    late = system.account.calls[-1]
    assert late.outcome == "after_deadline" and late.elapsed_s >= 120.0
    assert system.episode_summary()["usage"]["model_wait_s"] >= 120.0
    assert np.allclose(chunk[:, :7], obs.joint_positions)


def test_deadline_before_a_round_stops_asking(observed):
    _, obs = observed
    holder = {}
    script = [step(call("observe"), call("locate", {"object": "pan"}),
                   on_request=lambda: holder["clock"].advance(60.0)),
              step(call("observe"), on_request=lambda: holder["clock"].advance(20.0)),
              step(content="unused")]
    with FakeChatServer(script) as server:
        system, clock = agent(server, turn_deadline_s=70.0)
        holder["clock"] = clock
        system.act(obs)
    # Round 2 finished after 80 s > 70 s: its observe was not run, no third call.
    assert system.outcome == "deadline" and len(server.requests) == 2
    assert [a.tool for a in system.account.actions] == ["observe", "locate"]


def test_action_budget_ends_the_turn(observed):
    _, obs = observed
    script = [step(*[call("observe")] * 5), step(content="unused")]
    with FakeChatServer(script) as server:
        system, _ = agent(server, max_actions=3)
        system.act(obs)
    assert system.outcome == "action_limit" and len(system.account.actions) == 3


def test_usage_is_null_when_the_server_omits_it_and_spending_stops(observed, tmp_path):
    _, obs = observed
    script = [step(call("observe"), usage=None), step(content="done", usage=(50, 5))]
    with FakeChatServer(script) as server:
        system, _ = agent(server, price_table={"input_per_mtok": 1.0, "output_per_mtok": 4.0},
                          record_dir=str(tmp_path))
        system.act(obs)
        requests = len(server.bodies())
    # Unknown usage is unknown, never zero, and it stops spending: the plan it
    # brought still runs (observe), but no second request goes out.
    (first,) = system.account.calls
    assert requests == 1 and system.outcome == "usage_unknown"
    assert [a.tool for a in system.account.actions] == ["observe"]
    assert first.tokens_in is None and first.tokens_out is None and first.cost_usd is None
    s = system.episode_summary()["usage"]
    assert s["tokens_in"] is None and s["tokens_out"] is None and s["cost_usd"] is None
    assert [c["tokens_in"] for c in s["calls"]] == [None]
    lines = [json.loads(l) for l in (tmp_path / "agent_s-1.jsonl").read_text().splitlines()]
    assert lines[0]["kind"] == "model_call" and lines[0]["tokens_in"] is None
    assert lines[-1]["kind"] == "summary" and lines[-1]["usage"]["cost_usd"] is None


def test_one_overload_retry_keeps_the_request_and_charges_the_wait(observed):
    _, obs = observed
    script = [step(status=503, body=OVERLOAD), step(content="done")]
    with FakeChatServer(script) as server:
        system, _ = agent(server, overload_wait_s=3.0)
        system.act(obs)
        requests = list(server.requests)
    assert len(requests) == 2 and requests[0] == requests[1]
    (rec,) = system.account.calls
    assert rec.overload_rejections == 1 and rec.retry_wait_s == 3.0 and rec.elapsed_s >= 3.0
    assert system.episode_summary()["usage"]["overload_rejections"] == 1


@pytest.mark.parametrize("script", [
    [step(status=503, body=b'{"error": "internal"}'), step(content="done")],  # not an overload
    [step(status=429, body=OVERLOAD), step(status=429, body=OVERLOAD), step(content="done")],  # twice
], ids=["unidentified", "second_overload"])
def test_other_rejections_invalidate_the_episode(observed, script):
    _, obs = observed
    with FakeChatServer(script) as server:
        system, _ = agent(server)
        with pytest.raises(EvaluationValidityError):
            system.act(obs)
        assert len(server.requests) == (1 if script[0]["body"] != OVERLOAD else 2)
    # The failed call is still charged: unknown usage (so unknown cost), every identified rejection.
    u = system.end_episode("error")["usage"]
    (rec,) = u["calls"]
    assert rec["outcome"] == "failed" and rec["tokens_in"] is None and u["cost_usd"] is None
    assert u["overload_rejections"] == (0 if script[0]["body"] != OVERLOAD else 2)


def test_key_comes_from_the_named_environment_variable(observed, monkeypatch):
    _, obs = observed
    monkeypatch.setenv("LABFERENCE_TEST_AGENT_KEY", "sk-test-123")
    with FakeChatServer([step(content="done")]) as server:
        system, _ = agent(server, api_key_env="LABFERENCE_TEST_AGENT_KEY")
        system.act(obs)
    assert server.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert b"sk-test-123" not in server.requests[0]
    assert "sk-test-123" not in json.dumps(system.profile())


def test_leak_scan_finds_a_planted_value(observed):
    instance, obs = observed
    with FakeChatServer([step(call("observe")), step(content="done")]) as server:
        system, _ = agent(server)
        system.act(obs)
    secrets = EvaluatorSecrets.of_instance(instance)
    assert system.scan_requests(secrets, instance.public_instruction()) == []
    # The same scan catches a driver that would write the sample mass or the answer.
    system.request_bodies.append(json.dumps({"messages": [
        {"role": "user", "content": f"sample weighs {instance.sample_mass_g:.1f} g"}]}).encode())
    system.request_bodies.append(json.dumps({"messages": [
        {"role": "tool", "content": f"add {instance.goal_set[0]}"}]}).encode())
    whats = {l.what for l in system.scan_requests(secrets, instance.public_instruction())}
    assert whats == {"sample_mass_g", "required_standard"}


def test_reported_processing_time_splits_model_and_communication(observed):
    _, obs = observed
    holder = {}
    script = [step(content="done", headers={"openai-processing-ms": "250"},
                   on_request=lambda: holder["clock"].advance(1.0))]
    with FakeChatServer(script) as server:
        system, clock = agent(server)
        holder["clock"] = clock
        system.act(obs)
    (rec,) = system.account.calls
    assert rec.latency_s == 1.0 and rec.model_computation_s == 0.25 and rec.communication_s == 0.75
    s = system.end_episode("done")
    u = s["usage"]
    assert u["model_computation_s"] == 0.25 and u["communication_s"] == 0.75 and s["outcome"] == "final"
    assert u["turn_elapsed_s"] == 1.0


def test_runtime_end_mid_motion_keeps_the_interrupted_attempt(observed, tmp_path):
    _, obs = observed
    with FakeChatServer([step(call("pick", {"object": "std_100"}))]) as server:
        system, _ = agent(server, record_dir=str(tmp_path))
        chunk = system.act(obs)
    assert not np.allclose(chunk[-1, :7], obs.joint_positions)  # the pick started moving
    s = system.end_episode("episode_deadline")
    assert s["outcome"] == "episode_deadline" and s["usage"]["actions"] == 1
    (rec,) = system.account.actions
    assert rec.tool == "pick" and not rec.ok and rec.error.startswith("interrupted")
    lines = [json.loads(l) for l in (tmp_path / "agent_s-1.jsonl").read_text().splitlines()]
    assert [l["kind"] for l in lines] == ["model_call", "action", "summary"]


@pytest.mark.parametrize("returns_before_end", [True, False], ids=["returns_in_time", "still_out_at_end"])
def test_a_request_in_flight_when_the_runtime_ends_is_charged_once(observed, returns_before_end):
    """The bridge stops dispatch and waits for the request; if it is still out at the
    end it is charged with unknown usage, and its late reply is not charged again."""
    _, obs = observed
    arrived, released = threading.Event(), threading.Event()

    def hold():
        arrived.set()
        released.wait(30)

    with FakeChatServer([step(call("pick", {"object": "std_100"}), on_request=hold)]) as server:
        system, _ = agent(server, price_table={"input_per_mtok": 1.0, "output_per_mtok": 1.0})
        worker = threading.Thread(target=system.act, args=(obs,))
        worker.start()
        assert arrived.wait(30)
        system.stop_dispatch("completed")
        if returns_before_end:
            released.set()
            worker.join(30)
        summary = system.end_episode("completed")
        released.set()
        worker.join(30)
    assert not worker.is_alive() and summary["outcome"] == "completed"
    u = summary["usage"]
    (rec,) = u["calls"]
    assert u["actions"] == 0  # nothing is dispatched once the runtime ends the episode
    if returns_before_end:
        assert (rec["outcome"], rec["tokens_in"], rec["tokens_out"]) == ("plan", 100, 20)
        assert u["cost_usd"] == pytest.approx(120 / 1e6)
    else:
        assert rec["outcome"] == "in_flight_at_end" and rec["tokens_in"] is None and u["cost_usd"] is None
    assert len(system.account.calls) == 1
    # The body went to the server either way: the leak scan covers it.
    assert system.request_bodies == server.requests and len(server.requests) == 1


def test_no_request_goes_out_once_the_runtime_has_ended_the_episode(observed):
    """The runtime ends the episode after the worker's last checks, before it sends."""
    _, obs = observed
    with FakeChatServer([step(call("observe"))]) as server:
        system, _ = agent(server)
        system._past_deadline = lambda: bool(system.end_episode("completed")) and False
        system.act(obs)
    assert server.requests == [] and system.request_bodies == []
    assert system.account.calls == [] and system.rounds == 0 and system.outcome == "completed"


def test_a_reply_back_just_as_the_episode_ends_is_charged_once_and_the_record_stays_closed(
        observed, tmp_path, monkeypatch):
    """The runtime's end lands between the reply and its charge: the call is the end's
    in_flight_at_end call, and the worker neither charges it again nor reopens the record."""
    from labference_ros.policies.agent import driver

    _, obs = observed
    usage_of = driver.usage_of
    with FakeChatServer([step(call("observe"))]) as server:
        system, _ = agent(server, record_dir=str(tmp_path))

        def usage_then_end(reply):
            summary = system.end_episode("completed")
            assert [c["outcome"] for c in summary["usage"]["calls"]] == ["in_flight_at_end"]
            return usage_of(reply)

        monkeypatch.setattr(driver, "usage_of", usage_then_end)
        system.act(obs)
    assert [c.outcome for c in system.account.calls] == ["in_flight_at_end"] and system.account.actions == []
    assert system._log is None and system.request_bodies == server.requests
    lines = [json.loads(l) for l in (tmp_path / "agent_s-1.jsonl").read_text().splitlines()]
    assert [l["kind"] for l in lines] == ["model_call", "summary"]
    assert lines[0]["outcome"] == "in_flight_at_end"
    system._record({"kind": "action"})  # anything the worker finishes later is not written
    assert system._log is None and len((tmp_path / "agent_s-1.jsonl").read_text().splitlines()) == 2
