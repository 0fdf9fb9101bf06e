"""Test-wide environment: loopback-only DDS and a domain id of the test run's own."""
from __future__ import annotations

import os
import pathlib

from labference_ros.rosenv import apply_loopback

REPO = pathlib.Path(__file__).resolve().parent.parent

# A domain id of this test run's own (ROS 2 advises 0..101 on Linux), so a demo running beside the tests never
# cross-talks with them. Subprocesses inherit it.
os.environ.setdefault("ROS_DOMAIN_ID", str(43 + os.getpid() % 58))  # 43..100: never the default 42
apply_loopback()
