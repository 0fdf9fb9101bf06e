"""The fiducial_tracker node on rendered camera images: a marker's pose becomes its
object's centre through the marker table, whatever the image encoding; an
image that does not fit its size is skipped without stopping the node; a
camera_info's matrix is used for images of its size."""
from __future__ import annotations

import json
import math
import pathlib
import sys

from labference_ros.core.geometry import body_axis
from rosproc import Proc

PROBE = pathlib.Path(__file__).resolve().parents[1] / "peers" / "tracker_probe.py"
CENTRE = (0.45, 0.05, 0.002)  # the marker's printed face in test_fiducials' scene
MARKERS = '\'{"std_10": {"id": 7, "length_m": 0.04, "offset_m": [0, 0, -0.015]}}\''


def test_a_rendered_marker_becomes_its_objects_pose():
    tracker = Proc([sys.executable, "-m", "labference_ros.nodes.fiducial_tracker", "--ros-args",
                    "-p", "camera:=front", "-p", f"markers_json:={MARKERS}"])
    probe = None
    try:
        probe = Proc([sys.executable, str(PROBE)])
        lines = probe.wait_for("RESULT", timeout=180)
        assert lines, probe.seen + tracker.seen
        result = json.loads(lines[0][len("RESULT "):])
        assert tracker.popen.poll() is None, tracker.seen  # a bad image did not stop it
    finally:
        if probe is not None:
            probe.stop()
        tracker.stop()
    below_face = (CENTRE[0], CENTRE[1], CENTRE[2] - 0.015)  # the object's centre, 1.5 cm under the face
    for encoding in ("rgb8", "bgr8"):
        seen = result[encoding]
        assert seen is not None and seen["names"] == ["std_10"], (encoding, seen)
        assert seen["sec"] == {"rgb8": 11, "bgr8": 12}[encoding]  # stamped with the image's time
        assert math.dist(seen["positions"][0], below_face) < 0.012, seen  # docs/real-rig.md: within 1 cm at 1280x960
        axis = body_axis(seen["quaternions"][0])  # the object's z: the marker's face normal
        assert math.degrees(math.acos(min(1.0, axis[2]))) < 3.0, seen  # the face looks up
    assert result["truncated"] is None  # nothing published for an image that does not fit its size
    assert result["after_truncated"]["names"] == ["std_10"]
    # An off-centre principal point, as camera_info gives it: the pose is still within 1 cm
    # (the centred pinhole is centimetres off here, test_fiducials.py).
    cropped = result["cropped_with_info"]
    assert cropped is not None and cropped["names"] == ["std_10"], cropped
    assert math.dist(cropped["positions"][0], below_face) < 0.012, cropped
