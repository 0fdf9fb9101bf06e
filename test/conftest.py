"""Test-wide environment: loopback-only DDS and a domain id of the test run's own."""
from __future__ import annotations

import json
import os
import pathlib

from labference_ros.rosenv import DISCOVERY_ENV, PEERS_ENV, apply_loopback

REPO = pathlib.Path(__file__).resolve().parent.parent


def run_domain() -> str:
    """This test process's default ROS domain, in 43..99 (ROS 2 advises 0..101 on Linux;
    never 0 or the project's old default 42). Each test run, and under pytest-xdist
    each worker of a run, owns a pair of domains: this one and the next (for tests that
    need a second one), so parallel workers never share one. Graphs that tests start
    themselves claim their own (test/ros_domains.py); launches without ROS_DOMAIN_ID
    claim the lowest free ones, far below this range."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... under `pytest -n N`
    if not worker.startswith("gw"):
        return str(43 + (os.getpid() % 28) * 2)
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    run = int(os.environ.get("PYTEST_XDIST_TESTRUNUID", "0") or "0", 16)
    pair = (run % max(1, 28 // workers)) * workers + int(worker[2:]) % workers
    return str(43 + pair * 2)


# Subprocesses inherit it, so a demo running beside the tests never cross-talks with them.
# A pytest-xdist worker always takes its own: it inherits the controller's environment,
# where this file already set one (shared by every worker, it would mix their graphs).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["ROS_DOMAIN_ID"] = run_domain()
else:
    os.environ.setdefault("ROS_DOMAIN_ID", run_domain())
# A rig's discovery scope left in the shell never reaches a test or what it starts:
# only a launch of the real graph widens discovery, from its own arguments.
os.environ.pop(DISCOVERY_ENV, None)
os.environ.pop(PEERS_ENV, None)
apply_loopback()


def _file_seconds() -> dict[str, float]:
    try:
        return json.loads((pathlib.Path(__file__).parent / "file_seconds.json").read_text())["seconds"]
    except (OSError, ValueError, KeyError):  # only the order suffers
        return {}


FILE_SECONDS = _file_seconds()


def pytest_collection_modifyitems(config, items):
    """The longest test files first (test/file_seconds.json, from test/file_seconds.py;
    the others keep their order after them): xdist hands out whole files (--dist
    loadfile) in this order, so a long graph file never starts last while the other
    worker has run out of work."""
    items.sort(key=lambda item: -FILE_SECONDS.get(pathlib.Path(os.path.relpath(item.path, REPO)).as_posix(), 0))
