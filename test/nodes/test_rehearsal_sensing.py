"""The rehearsal's sensing chain between real processes: lab_sim renders the marker
scene, fiducial_tracker reads every object's marker on the overhead camera and
world_estimator confirms, along the camera's rays, that the scene is the instance's
start, the balance's pose sensed from the marker on its pan (balance_marker), and refuses
another layout's, naming what differs."""
from __future__ import annotations

import json
import pathlib
import re
import sys

import pytest

from labference_ros.cell.description import weighing_cell
from rosproc import Proc

PROBE = pathlib.Path(__file__).resolve().parents[1] / "peers" / "rehearsal_sensing_probe.py"


@pytest.mark.slow
def test_the_marker_camera_confirms_the_simulated_scene():
    markers = json.dumps(weighing_cell().marker_table())
    nodes = [
        Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-p", "fiducials:=true",
              "-p", "marker_camera_width:=1600", "-p", "marker_camera_height:=1200"]),
        Proc([sys.executable, "-m", "labference_ros.nodes.balance"]),
        Proc([sys.executable, "-m", "labference_ros.nodes.fiducial_tracker", "--ros-args", "-p", "camera:=overhead",
              "-p", f"markers_json:='{markers}'"]),  # quoted: YAML reads a bare {...} as a map
        Proc([sys.executable, "-m", "labference_ros.nodes.world_estimator", "--ros-args",
              "-p", "marker_camera:=overhead", "-p", "use_sim_time:=true", "-p", "reading_timeout_s:=5.0",
              "-p", "balance_marker:=true"]),  # the balance's pose from the marker on its pan
    ]
    probe = None
    try:
        probe = Proc([sys.executable, str(PROBE)])
        lines = probe.wait_for("RESULT", timeout=240)
        assert lines, probe.seen + [line for n in nodes for line in n.seen]
        result = json.loads(lines[0][len("RESULT "):])
    finally:
        if probe is not None:
            probe.stop()
        for node in nodes:
            node.stop()
    logs = [line for n in nodes for line in n.seen]
    assert result["reset"] and result["connected"], (result, logs)
    assert result["names_seen"] == sorted(weighing_cell().marker_table()), (result, logs)
    assert result["same"]["success"], result["same"]["message"]
    other = result["other"]
    assert not other["success"] and "the instance puts it at" in other["message"], other
    # The other layout's balance stands 18 mm from where the simulated one is: the marker says so.
    assert re.search(r"balance: its marker puts the pan at \(0\.52\d, -0\.21\d\), the instance at "
                     r"\(0\.508, -0\.201\): 1\d mm off", other["message"]), other
