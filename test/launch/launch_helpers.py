"""Run `labference launch` with stand-in nodes and read what it prints."""
from __future__ import annotations

import os
import pathlib
import sys

from rosproc import Proc

FAKES = pathlib.Path(__file__).parent / "fake_nodes"
LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")  # the console script
STAND_INS = {"lab_sim": "fake_lab_sim.py", "balance": "fake_balance.py", "referee": "fake_referee.py",
             "policy_bridge": "fake_policy_bridge.py"}


def launch_with_fakes(args: list[str], knobs: dict[str, str] | None = None) -> Proc:
    argv = [LABFERENCE, "launch", "weighing_sim.launch.py", *args]
    for exe, fake in STAND_INS.items():
        argv += ["--substitute", f"{exe}={FAKES / fake}"]
    env = dict(os.environ)
    env.update(knobs or {})
    return Proc(argv, env=env)
