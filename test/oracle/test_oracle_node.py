"""The oracle node publishes scope-checked interventions bound to the latest
/referee/opportunities, and a receipt for each (own ROS domain, subprocess)."""
import json
import os
import subprocess
import sys

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain

PEER = os.path.join(os.path.dirname(__file__), "oracle_node_peer.py")


def test_oracle_node_binds_state_and_decision_support_to_the_latest_opportunity():
    env = loopback_environ()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH", "")) if p)
    with own_domain() as domain:
        env["ROS_DOMAIN_ID"] = domain
        out = subprocess.run([sys.executable, PEER, "--ros-args", "-p", "condition:=replace:state+assist:decision"],
                             env=env, capture_output=True, text=True, timeout=120)
    line = next((s for s in out.stdout.splitlines() if s.startswith("RESULT ")), None)
    assert line is not None, out.stdout + out.stderr
    got = json.loads(line[len("RESULT "):])
    by_site = {i["site"]: i for i in got["interventions"]}
    assert set(by_site) == {"state", "decision"}
    assert by_site["state"]["payload"] == {"displayed_g": 160.0, "stable": True}
    assert by_site["decision"]["payload"] == {"operation": {"type": "add", "object": "std_20",
                                                            "destination": "pan"}}
    assert all(i["opportunity_id"] == 3 for i in got["interventions"])
    assert [r["status"] for r in got["receipts"]] == ["delivered", "delivered"]
