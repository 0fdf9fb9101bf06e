"""Test-wide environment: loopback-only DDS and a domain id of the test run's own."""
from __future__ import annotations

import os
import pathlib

from labference_ros.rosenv import apply_loopback

REPO = pathlib.Path(__file__).resolve().parent.parent

# A domain id of this test run's own, so a demo running beside the tests never
# cross-talks with them. Subprocesses inherit it.
os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 80))
apply_loopback()
