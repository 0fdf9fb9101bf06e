import os
import pathlib
import subprocess
import sys

import pytest

TEST_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TEST_ROOT / "ros"))
sys.path.insert(0, str(TEST_ROOT / "golden"))
sys.path.insert(0, str(TEST_ROOT / "reporting"))

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


@pytest.fixture(scope="session")
def expert_runs(tmp_path_factory):
    """Two scripted_expert launches of seed 0 at the same time on one machine, neither
    told a ROS domain (each claims its own); expert1 records bags, expert2 does not.
    name -> (run dir, console output, exit status)."""
    root = tmp_path_factory.mktemp("expert_runs")
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}
    runs = {name: root / name for name in ("expert1", "expert2")}
    procs = {name: subprocess.Popen([LABFERENCE, "launch", "weighing_sim.launch.py", f"output_dir:={out}", "seed:=0",
                                     "system:=scripted_expert", "episodes:=2",
                                     f"record:={'true' if name == 'expert1' else 'false'}"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name, out in runs.items()}
    outputs = {name: p.communicate(timeout=1500)[0] for name, p in procs.items()}
    return {name: (runs[name], outputs[name], procs[name].returncode) for name in runs}
