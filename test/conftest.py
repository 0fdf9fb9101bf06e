"""Test-wide environment: loopback-only DDS and a domain id of the test run's own."""
from __future__ import annotations

import os
import pathlib

from labference_ros.rosenv import apply_loopback

REPO = pathlib.Path(__file__).resolve().parent.parent


def run_domain() -> str:
    """This test run's default ROS domain, in 43..99 (ROS 2 advises 0..101 on Linux; never
    0 or the project's old default 42). A run owns a pair of domains: this one and the
    next (for tests that need a second one). Graphs that tests start themselves claim
    their own (test/ros_domains.py); launches without ROS_DOMAIN_ID claim the lowest
    free ones, far below this range."""
    return str(43 + (os.getpid() % 28) * 2)


# Subprocesses inherit it, so a demo running beside the tests never cross-talks with them.
os.environ.setdefault("ROS_DOMAIN_ID", run_domain())
apply_loopback()
