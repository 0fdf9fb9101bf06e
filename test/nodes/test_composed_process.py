"""nodes/composed.py: several nodes in one process, each with its own name, parameters
and remappings, spun by one executor; and what the embedded launcher starts for a
graph description whose nodes share a process."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys

import pytest
from ros_domains import own_domain

from labference_ros.graphs.graph import Graph, NodeSpec
from labference_ros.graphs.weighing_sim import GRAPH
from labference_ros.launcher.plan import COMPOSED_MODULE, node_processes
from labference_ros.nodes.composed import build, parse_spec
from labference_ros.rosenv import loopback_environ

# The test's own node: a latched tare, then a wrench every 50 ms until both balances
# have answered on their remapped reading topics; the node names it saw.
PROBE = """
import json, time
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile
from labference.msg import BalanceReading
from labference_ros.nodes.matching import measurement_qos
from labference_ros.nodes.runtime import init_ros

rclpy = init_ros([])
node = rclpy.create_node("composed_probe")
tare = node.create_publisher(WrenchStamped, "/balance/tare",
                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
wrench = node.create_publisher(WrenchStamped, "/balance/wrench", measurement_qos(200))
sources = {}
for topic in ("/a/reading", "/b/reading"):
    node.create_subscription(BalanceReading, topic, lambda m, t=topic: sources.setdefault(t, m.source),
                             measurement_qos(200))
deadline = time.monotonic() + 60
while wrench.get_subscription_count() < 2 and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
empty = WrenchStamped()
empty.wrench.force.z = -2.0
tare.publish(empty)
k = 0
while len(sources) < 2 and time.monotonic() < deadline:
    k += 1
    msg = WrenchStamped()
    msg.header.stamp.nanosec = k * 10_000_000
    msg.wrench.force.z = -2.2
    wrench.publish(msg)
    rclpy.spin_once(node, timeout_sec=0.05)
# Node names come with ros_discovery_info, which may follow the endpoints' own discovery.
while not {"balance_a", "balance_b"} <= set(node.get_node_names()) and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
names = sorted(node.get_node_names())
print("PROBE " + json.dumps({"sources": sources, "names": names}), flush=True)
"""


def _balance(name: str, source: str, topic: str) -> dict:
    return {"name": name, "executable": "balance",
            "arguments": ["--ros-args", "-r", f"__node:={name}", "-p", f"source:='{source}'",
                          "-r", f"/balance/reading:={topic}"]}


def test_two_nodes_in_one_process_keep_their_own_names_parameters_and_remappings():
    spec = [_balance("balance_a", "source_a", "/a/reading"), _balance("balance_b", "source_b", "/b/reading")]
    with own_domain() as domain:
        env = {**loopback_environ(), "ROS_DOMAIN_ID": domain}
        composed = subprocess.Popen([sys.executable, "-u", "-m", COMPOSED_MODULE, "two_balances", json.dumps(spec)],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            probe = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
        finally:
            composed.send_signal(signal.SIGTERM)
            output, _ = composed.communicate(timeout=30)
    line = next((x for x in probe.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, probe.stdout + probe.stderr
    seen = json.loads(line[len("PROBE "):])
    assert seen["sources"] == {"/a/reading": "source_a", "/b/reading": "source_b"}, output
    assert {"balance_a", "balance_b"} <= set(seen["names"]), seen["names"]
    assert composed.returncode == 0, output


def test_a_bad_node_list_is_refused_with_its_reason_and_no_traceback():
    one = {"name": "x", "executable": "balance", "arguments": []}
    cases = [(["[]"], "non-empty JSON list"), (["{"], "not JSON"),
             ([json.dumps([{**one, "executable": "referee"}])], "cannot share a process"),
             ([json.dumps([{**one, "executable": "no_such_node"}])], "no node executable 'no_such_node'"),
             ([json.dumps([one, one])], "unique"),
             ([json.dumps([{**one, "executable": "labference_ros.nodes.balance"}])], "must name a module"),
             ([json.dumps([{**one, "name": ["a"]}])], "non-empty string"),
             ([json.dumps([one]), "--ros-args", "-r", "__node:=y"], "usage")]
    for args, reason in cases:
        run = subprocess.run([sys.executable, "-m", COMPOSED_MODULE, "bad", *args],
                             env={**os.environ, **loopback_environ()}, capture_output=True, text=True, timeout=60)
        assert run.returncode == 2, (args, run.stderr)
        assert reason in run.stderr and "Traceback" not in run.stderr, (args, run.stderr)


def test_a_node_that_cannot_be_built_takes_down_the_ones_built_before_it():
    calls = []

    class Built:
        def __init__(self, **options):
            calls.append(("built", options["cli_args"][0]))

        def close(self):
            calls.append(("closed",))

        def destroy_node(self):
            calls.append(("destroyed",))

    class Refused:
        def __init__(self, **options):
            raise ValueError("parameter gravity: not a number")

    entry = {"name": "n", "executable": "balance", "arguments": ["first"]}
    with pytest.raises(ValueError, match="gravity"):
        build([(entry, Built), (entry, Refused)])
    assert calls == [("built", "first"), ("closed",), ("destroyed",)]


def test_parse_spec_names_what_is_missing():
    with pytest.raises(ValueError, match="exactly name, executable and arguments"):
        parse_spec(json.dumps([{"name": "lab_sim", "executable": "lab_sim"}]))
    with pytest.raises(ValueError, match="list of strings"):
        parse_spec(json.dumps([{"name": "lab_sim", "executable": "lab_sim", "arguments": [3]}]))


def test_nodes_of_one_process_start_as_one_unless_one_is_substituted():
    shared = {n.name: dataclasses.replace(n, process="sim") for n in GRAPH.nodes if n.name in ("lab_sim", "balance")}
    graph = dataclasses.replace(GRAPH, nodes=tuple(shared.get(n.name, n) for n in GRAPH.nodes))
    procs = {p.name: p for p in node_processes(graph, graph.defaults())}
    assert "lab_sim" not in procs and "balance" not in procs
    sim = procs["lab_sim+balance"].argv
    assert sim[sim.index("-m") + 1] == COMPOSED_MODULE
    nodes = parse_spec(sim[-1])
    assert [(n["name"], n["executable"]) for n in nodes] == [("lab_sim", "lab_sim"), ("balance", "balance")]
    assert "camera_rate:=10.0" in nodes[0]["arguments"] and "__node:=balance" in nodes[1]["arguments"]
    assert not procs["lab_sim+balance"].ends_graph
    # A stand-in for either (a test's fake node) runs alone, and so does the other.
    alone = {p.name for p in node_processes(graph, graph.defaults(), substitutes={"balance": "fake.py"})}
    assert {"lab_sim", "balance"} <= alone and "lab_sim+balance" not in alone
    # The generated ROS 2 launch file keeps a process per node and says which ones `labference launch` joins.
    from labference_ros.graphs.launchgen import launch_source
    assert "runs lab_sim and balance in one process (lab_sim+balance" in launch_source(graph)
    # The weighing graph shares that process (labference_ros/graphs/weighing_sim.py).
    assert launch_source(GRAPH) == launch_source(graph)
    assert "lab_sim+balance" in {p.name for p in node_processes(GRAPH, GRAPH.defaults())}


def test_nodes_that_share_a_process_take_no_remappings():
    graph = Graph(name="g", description="", package="labference", arguments=(), nodes=(
        NodeSpec("lab_sim", "lab_sim", process="p"),
        NodeSpec("balance", "balance", remappings=(("/balance/reading", "/x"),), process="p")))
    with pytest.raises(ValueError, match="take no remappings"):
        node_processes(graph, {})
