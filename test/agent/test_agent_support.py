"""Oracle Assist support for the agent (issue 16): capability negotiation,
delivery as one user message in the next model request, its record, and a
matched continuation where state support changes the agent's choice."""
import json
import re

import pytest

from labference_ros.core.observation import EvaluatorSecrets
from labference_ros.core.operations import add
from labference_ros.launcher.arguments import LaunchArgumentError
from labference_ros.launcher.validate import check_support
from labference_ros.oracle.checkpoints import population_from_instances, prepare
from labference_ros.oracle.continuation import run_branch
from labference_ros.oracle.supports import COMPATIBLE, Support, compatibility
from labference_ros.policies import make
from labference_ros.tasks.weighing.instances import generate
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G
from fake_openai import FakeChatServer, FakeClock, call, step
from sim_observation import settled_observation

LABEL = "Evaluator support"


@pytest.fixture(scope="module")
def observed():
    instance, obs, reading = settled_observation(index=3)  # sample 60 g
    return instance, obs, reading


def agent(server, **params):
    system = make("agent", agent_url=server.url, agent_model="fake-model", api_key_env="", **params)
    clock = FakeClock()
    system.clock, system.sleep = clock, clock.sleep
    system.reset("s-1", 0)
    return system


def support_lines(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], str) and m["content"].startswith(LABEL)]


def test_agent_exposes_assist_at_state_and_decision_only():
    system = make("agent", agent_model="m")
    assert system.interfaces() == {"state": ("assist",), "decision": ("assist",)}
    assert compatibility(system, Support("assist", "state")) == COMPATIBLE
    assert compatibility(system, Support("assist", "decision")) == COMPATIBLE
    assert compatibility(system, Support("replace", "state")) == "incompatible:replace_not_accepted_at_state"
    assert compatibility(system, Support("replace", "decision")) == "incompatible:replace_not_accepted_at_decision"
    assert compatibility(system, Support("assist", "geometry")) == "incompatible:no_geometry_interface"
    assert compatibility(system, Support("replace", "skill")) == "incompatible:no_skill_interface"
    # The launcher lets an agent run with Assist at state and decision (it refuses Replace).
    check_support({"system": "agent", "agent_model": "m", "support": "assist:state+assist:decision"})
    with pytest.raises(LaunchArgumentError, match="incompatible:replace_not_accepted_at_state"):
        check_support({"system": "agent", "agent_model": "m", "support": "replace:state"})
    for site, mode in (("state", "replace"), ("geometry", "assist"), ("skill", "replace"), ("nowhere", "assist")):
        with pytest.raises(ValueError):
            system.supply(site, mode, {})


def test_a_support_goes_out_once_in_the_next_request_and_is_recorded(observed, tmp_path):
    instance, obs, reading = observed
    decision = {"operation": add("std_100").to_dict()}
    system = None

    def supply_decision():  # arrives while the first request is out
        system.supply("decision", "assist", decision)

    script = [step(call("observe"), on_request=supply_decision),
              step(call("report_state", {"text": "looked"})),
              step(content="done")]
    with FakeChatServer(script) as server:
        system = agent(server, record_dir=str(tmp_path))
        system.supply("state", "assist", {"displayed_g": 1.0, "stable": False})
        state = {"displayed_g": float(reading.displayed_g), "stable": True}
        system.supply("state", "assist", state)  # replaces the one not sent yet: only it goes out
        system.act(obs)
        bodies = server.bodies()
    assert system.outcome == "final" and len(bodies) == 3
    state_text = f"{LABEL} (assist, state): {json.dumps(state, sort_keys=True)}"
    decision_text = f"{LABEL} (assist, decision): {json.dumps(decision, sort_keys=True)}"
    assert support_lines(bodies[0]) == [state_text]
    assert bodies[0]["messages"][-1]["content"] == state_text  # after the instruction, last
    # Supplied mid-call: the next request; both stay in the conversation, each once.
    assert support_lines(bodies[1]) == [state_text, decision_text]
    assert support_lines(bodies[2]) == [state_text, decision_text]
    # The model's own record shows what it was shown, and in which round.
    lines = [json.loads(line) for line in (tmp_path / "agent_s-1.jsonl").read_text().splitlines()]
    shown = [(l["round"], l["site"], l["mode"], l["payload"], l["text"]) for l in lines if l["kind"] == "support"]
    assert shown == [(1, "state", "assist", state, state_text), (2, "decision", "assist", decision, decision_text)]
    # Scope-checked supports are authorized: the leak scan does not flag the displayed sample mass.
    assert float(reading.displayed_g) == instance.sample_mass_g
    secrets = EvaluatorSecrets.of_instance(instance)
    assert system.scan_requests(secrets, instance.public_instruction()) == []
    system.request_bodies.append(json.dumps({"messages": [{"role": "user", "content": state_text.replace(
        LABEL, "Copied")}]}).encode())
    assert {l.what for l in system.scan_requests(secrets, instance.public_instruction())} == {"sample_mass_g"}


def test_reset_drops_supports_not_sent(observed):
    _, obs, _ = observed
    with FakeChatServer([step(content="done")]) as server:
        system = agent(server)
        system.supply("state", "assist", {"displayed_g": 60.0, "stable": True})
        system.reset("s-2", 0)
        system.act(obs)
        bodies = server.bodies()
    assert len(bodies) == 1 and support_lines(bodies[0]) == []


# Matched continuation (issue 16 acceptance) ------------------------------------------
# basic-1-0000: sample 150 g, target 160 g, the required standard is std_10.
INSTANCE = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]
MISREAD_G = 140.0  # the scripted model's own reading of the 150 g display


def misreading_model(body: dict) -> dict:
    """A model that misreads the display as 140 g unless a state support in its
    conversation tells it the displayed load: it adds the standard that closes
    the gap between its reading and the instructed target."""
    text = "\n".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
    target = float(re.search(r"reading to (\d+(?:\.\d+)?) g", text).group(1))
    support = re.search(re.escape(LABEL) + r" \(assist, state\): (\{.*\})", text)
    reading = json.loads(support.group(1))["displayed_g"] if support else MISREAD_G
    gap = target - reading
    name = min(STANDARD_MASSES_G, key=lambda n: abs(STANDARD_MASSES_G[n] - gap))
    return step(call("pick", {"object": name}), call("place", {"target": "pan"}), call("wait", {"seconds": 2}))


@pytest.fixture(scope="module")
def checkpoint():
    cp = prepare(population_from_instances([INSTANCE])[0])
    assert cp.verified, cp.reason
    return cp


def branch(cp, condition, tmp_path):
    with FakeChatServer([misreading_model, step(content="done")]) as server:
        result = run_branch(cp, "agent", condition, budget_s=20.0, params={
            "agent_url": server.url, "agent_model": "fake-model", "api_key_env": "",
            "record_dir": str(tmp_path), "turn_deadline_s": 600.0})
        bodies = server.bodies()
    return result, bodies


def test_state_support_changes_the_agents_choice_at_the_checkpoint(checkpoint, tmp_path):
    base, base_bodies = branch(checkpoint, (), tmp_path / "base")
    sup, sup_bodies = branch(checkpoint, (Support("assist", "state"),), tmp_path / "assist")
    assert base.status == sup.status == "ok", (base.reason, sup.reason)
    # The referee's recorded first choice: the misread display leads to std_20; supported, std_10.
    assert base.choice == add("std_20").to_dict() and base.choice_correct is False
    assert sup.choice == add("std_10").to_dict() and sup.choice_correct is True
    assert (base.completed, sup.completed) == (False, True)
    assert base.receipts == [] and base.first_delivery_step is None
    # One state support per opportunity (the first at the handoff, a second after std_10
    # landed), each delivered, each joining the conversation at the model's next request.
    assert [(r["status"], r["site"], r["mode"], r["opportunity_id"]) for r in sup.receipts] == [
        ("delivered", "state", "assist", 1), ("delivered", "state", "assist", 2)]
    assert sup.receipts[0]["payload"] == {"displayed_g": 150.0, "stable": True}
    assert sup.first_delivery_step == 0  # delivered before the agent's first act
    shown = [f"{LABEL} (assist, state): {json.dumps(r['payload'], sort_keys=True)}" for r in sup.receipts]
    assert [support_lines(b) for b in sup_bodies] == [[shown[0]], [shown[0], shown[1]]]
    assert [support_lines(b) for b in base_bodies] == [[], []]
    # The agent's own record shows the supports it passed on, in the rounds it sent them.
    (record,) = (tmp_path / "assist").glob("agent_*.jsonl")
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(l["round"], l["payload"]) for l in lines if l["kind"] == "support"] == [
        (1, sup.receipts[0]["payload"]), (2, sup.receipts[1]["payload"])]
