"""Oracle support for remote policy servers: the optional `support` request
field (policies/request_support.py), over real loopback HTTP and WebSocket
servers, driven by the Oracle's continuation (the graph's episode loop)."""
from __future__ import annotations

import json
import os

import pytest
from fake_servers import FakeHttpPolicy, FakeOpenPiServer

from labference_ros.oracle.checkpoints import at_reset
from labference_ros.oracle.continuation import run_branch
from labference_ros.oracle.supports import compatibility, parse_condition
from labference_ros.policies import make
from labference_ros.policies.request_support import parse_accepts
from labference_ros.tasks.weighing.instances import generate

os.environ.setdefault("MUJOCO_GL", "egl")
INSTANCE = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]


def test_a_server_declares_what_it_takes():
    assert parse_accepts("") is None
    assert parse_accepts("assist:state, replace:decision,assist:state") == {"state": ("assist",),
                                                                            "decision": ("replace",)}
    for bad in ("replace:geometry", "assist:skill", "state", "assist:nowhere"):
        with pytest.raises(ValueError, match="accepts_support"):
            parse_accepts(bad)
    (state,) = parse_condition("assist:state")
    assert compatibility(make("http"), state) == "incompatible:action_only"
    assert compatibility(make("openpi", accepts_support="assist:state"), state) == "compatible"
    assert compatibility(make("http", accepts_support="replace:state"), state) == \
        "incompatible:assist_not_accepted_at_state"


def _act_bodies(server) -> list[dict]:
    return [json.loads(body) for path, body in server.requests if path == "/act"]


def test_http_requests_carry_each_accepted_support_once():
    checkpoint = at_reset(INSTANCE)
    with FakeHttpPolicy(chunk_len=10) as server:
        params = {"url": server.url, "accepts_support": "assist:state"}
        supported = run_branch(checkpoint, "http", parse_condition("assist:state"), params=params, budget_s=3.0)
        with_support = _act_bodies(server)
        server.exchanges.clear()
        base = run_branch(checkpoint, "http", (), params=params, budget_s=3.0)
        without = _act_bodies(server)
    assert supported.resolved and base.resolved, (supported.reason, base.reason)
    delivered = [r for r in supported.receipts if r["status"] == "delivered"]
    carried = [b["support"] for b in with_support if "support" in b]
    assert delivered and len(carried) == len(delivered)  # one request per delivery, none repeated
    first = carried[0]
    assert first == [{"site": "state", "mode": "assist", "payload": delivered[0]["payload"]}]
    assert set(first[0]["payload"]) == {"displayed_g", "stable"}
    assert all("support" not in b for b in without)  # base requests never carry the field
    # Assist adds information; this server ignores it, so the branches' requests are
    # otherwise identical: same ids, images and history, the server's own actions run.
    assert [{k: v for k, v in b.items() if k != "support"} for b in with_support] == without


def test_openpi_requests_carry_the_support_field():
    checkpoint = at_reset(INSTANCE)
    with FakeOpenPiServer(chunk_len=10) as server:
        params = {"port": server.port, "accepts_support": "assist:state,assist:decision"}
        branch = run_branch(checkpoint, "openpi", parse_condition("assist:state+assist:decision"), params=params,
                            budget_s=2.0)
    assert branch.resolved, branch.reason
    carried = [obs["support"] for obs in server.decoded if "support" in obs]
    assert carried and {s["site"] for s in carried[0]} == {"state", "decision"}
    decision = next(s for s in carried[0] if s["site"] == "decision")
    assert decision["mode"] == "assist" and set(decision["payload"]["operation"]) == {"type", "object",
                                                                                       "destination"}
