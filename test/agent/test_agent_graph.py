"""system:=agent in the real graph (`labference launch`), against the scripted
OpenAI-compatible server on loopback: the same referee scores its native choice
and, on the separate explicit track, its commitment; run.json keeps every
call's usage and the report turns it into time and cost per success."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from labference_ros.cli.main import main
from labference_ros.tasks.weighing.instances import generate, write_instance_list
from labference_ros.policies.agent.accounting import PriceTable
from labference_ros.reporting.report import build
from fake_openai import FakeChatServer, call, step

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
INSTANCE = generate("basic", 3, task_seed=1, layout_seed=100, policy_seed=0)[2]  # requires std_50
PRICES = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "source": "test table"}
# Distinct token counts per scripted reply, so each call's record is traceable to it.
KNOWN_USAGE = [(1200, 40), (2500, 90), (3100, 15)]


@pytest.mark.slow
@pytest.mark.parametrize("usages", [KNOWN_USAGE, [KNOWN_USAGE[0], None, KNOWN_USAGE[2]]],
                         ids=["usage_reported", "second_reply_without_usage"])
def test_agent_runs_in_the_graph_and_its_commitment_and_usage_are_recorded(tmp_path, usages):
    assert INSTANCE.goal_set == ("std_50",)
    instances = tmp_path / "instances.json"
    write_instance_list(instances, [INSTANCE])
    # The agent waits for a stable reading before committing: at t = 0 only Wait is legal.
    script = [step(call("wait", {"seconds": 2}), call("observe"), usage=usages[0]),
              step(call("commit_operation", {"operation": {"type": "add", "object": "std_50",
                                                           "destination": "pan"}}),
                   call("pick", {"object": "std_50"}), call("place", {"target": "pan"}),
                   call("wait", {"seconds": 4}), call("observe"), usage=usages[1]),
              step(content="The reading matches the target.", usage=usages[2])]
    out = tmp_path / "run"
    with FakeChatServer(script) as server:
        proc = subprocess.run(
            [LABFERENCE, "launch", "weighing_sim.launch.py", "system:=agent", f"agent_url:={server.url}",
             "agent_model:=fake-model", "system_params:=" + json.dumps({"api_key_env": "", "price_table": PRICES}),
             f"instances:={instances}",
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

    # Every call's usage, as the fake server reported it: null (never 0) where it reported none.
    usage = run["usage"]
    calls = usage["calls"]
    assert len(calls) == len(bodies) == usage["model_calls"]
    for rec, reported in zip(calls, usages):
        assert (rec["tokens_in"], rec["tokens_out"]) == (reported or (None, None))
        assert isinstance(rec["latency_s"], float) and rec["overload_rejections"] == 0
        # The fake server reports no processing time: the model/communication split is unknown.
        assert rec["model_computation_s"] is None and rec["communication_s"] is None
    # The episode can end (task complete) before the second plan's last observe.
    assert calls[1]["actions"] >= 4 and calls[1]["physical_execution_sim_s"] > 0
    assert usage["actions"] == sum(c["actions"] for c in calls) and usage["overload_rejections"] == 0
    prices = PriceTable.from_params(PRICES)
    expected_cost = (None if None in usages[:len(calls)]
                     else sum(prices.cost(*u) for u in usages[:len(calls)]))
    if expected_cost is None:
        assert usage["cost_usd"] is None and usage["tokens_in"] is None
    else:
        assert usage["cost_usd"] == pytest.approx(expected_cost)

    # The report: one PASS, so time/success is the attempt's wall time, cost/success its cost.
    (cell,) = build([out], draws=10)["cells"]
    a = cell["accounting"]
    assert (a["attempts"], a["PASS"]) == (1, 1)
    assert a["time_per_success_s"] == attempt["wall_s"] is not None
    assert a["model_calls"] == len(calls) and a["overload_rejections"] == 0
    if expected_cost is None:
        assert a["cost_per_success_usd"] is None and a["cost_unknown"] == 1
        assert a["cost_per_success_usd_rejection_sensitivity"] is None
    else:
        assert a["cost_per_success_usd"] == pytest.approx(expected_cost)
        assert a["cost_per_success_usd_rejection_sensitivity"] == pytest.approx(expected_cost)
    res = CliRunner().invoke(main, ["report", str(out), "--no-plots"])
    assert res.exit_code == 0, res.output
    line = next(l for l in res.output.splitlines() if l.startswith("accounting"))
    assert f"time/success {attempt['wall_s']:.3g} s" in line
    cost_text = "n/a (unknown 1)" if expected_cost is None else f"{expected_cost:.3g} USD"
    assert f"cost/success {cost_text}" in line
