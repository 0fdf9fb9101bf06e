"""fiducial_tracker: object poses from ArUco markers on one calibrated camera.

Subscribes /cameras/<camera>/image_raw (rgb8, bgr8, mono8...) of a world-fixed camera, finds
the markers (perception/fiducials.py) with the camera's mount pose from the cell
description and its intrinsics from /cameras/<camera>/camera_info (K and the
plumb_bob or rational_polynomial D of the image's size; a camera_info whose K is
zero, like the simulator's, leaves the cell description's field of view with a
centred principal point), and publishes /markers/poses (labference/MarkerDetections)
stamped with the image's time: one entry per object whose marker is seen once.

Which marker sits on which object is the `markers_json` parameter, e.g.
  {"std_10": {"id": 1, "length_m": 0.02, "offset_m": [0, 0, -0.004]}, ...}
id: the marker's id in the 4x4_50 dictionary; length_m: its printed side;
offset_m: the object's centre in the marker frame (x right, y up the printed
image, z out of its face), so the object's centre is p_marker + R_marker offset.
The object's orientation is the marker's (a marker on a top face: z is the
object's axis). markers_face_up (true): every marker lies face up, which decides
between the two poses a small, obliquely seen marker fits almost equally well.
"""
from __future__ import annotations

import json

import numpy as np
from geometry_msgs.msg import Pose
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import CameraInfo, Image

from labference.msg import MarkerDetections
from labference_ros.monitoring.kinematics import matrix_to_quaternion
from labference_ros.nodes.matching import image_qos
from labference_ros.nodes.runtime import run_node
from labference_ros.perception.camera import world_camera_calibration
from labference_ros.perception.fiducials import detect_markers
from labference_ros.recording.videos import image_array
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family


# camera_info distortion models whose D OpenCV's pinhole functions take as they are.
DISTORTION_MODELS = ("plumb_bob", "rational_polynomial")


def parse_marker_table(text: str) -> dict[int, tuple[str, float, np.ndarray]]:
    """marker id -> (object, side length, centre offset in the marker frame); ValueError names the fault."""
    try:
        table = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"markers_json is not JSON: {exc}") from None
    if not isinstance(table, dict) or not table:
        raise ValueError("markers_json must map each tracked object to its marker, e.g. "
                         '{"std_10": {"id": 1, "length_m": 0.02, "offset_m": [0, 0, -0.004]}}')
    out: dict[int, tuple[str, float, np.ndarray]] = {}
    for name, entry in table.items():
        try:
            marker_id, length = int(entry["id"]), float(entry["length_m"])
            offset = np.asarray(entry.get("offset_m", (0.0, 0.0, 0.0)), dtype=float).reshape(3)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"markers_json[{name!r}]: needs id, length_m and optional offset_m [x, y, z] "
                             f"({exc})") from None
        if marker_id in out:
            raise ValueError(f"markers_json: marker {marker_id} is on both {out[marker_id][0]} and {name}")
        if not length > 0:
            raise ValueError(f"markers_json[{name!r}]: length_m must be positive, got {length}")
        out[marker_id] = (str(name), length, offset)
    return out


class FiducialTracker(Node):
    def __init__(self):
        super().__init__("fiducial_tracker")
        self.camera = str(self.declare_parameter("camera", "front").value)
        # The camera's mount: the family's cell says where it is (an overhead camera differs per cell).
        self.cell = task_family(str(self.declare_parameter("task", DEFAULT_FAMILY).value)).cell_description()
        self.table = parse_marker_table(str(self.declare_parameter("markers_json", "").value))
        self.lengths = {marker_id: length for marker_id, (_name, length, _offset) in self.table.items()}
        # Markers printed on top faces: of a small marker's two near-equal poses, the face-up one.
        self.prefer_normal = (0.0, 0.0, 1.0) if bool(self.declare_parameter("markers_face_up", True).value) else None
        self.calibration = world_camera_calibration(self.camera, 240, 320, self.cell)  # world-fixed, or a clear error
        self.pub = self.create_publisher(MarkerDetections, "/markers/poses", QoSProfile(depth=50))
        images = image_qos(str(self.declare_parameter("image_reliability", "reliable").value))
        self.create_subscription(Image, f"/cameras/{self.camera}/image_raw", self.on_image, images)
        self.intrinsics: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}  # (height, width) -> K, D
        self.info_refusals: set[str] = set()  # each camera_info fault is said once
        self.create_subscription(CameraInfo, f"/cameras/{self.camera}/camera_info", self.on_info, QoSProfile(depth=5))

    def on_info(self, msg: CameraInfo) -> None:
        k = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
        fault = None
        if not (k[0, 0] > 0 and k[1, 1] > 0):
            fault = "carries no intrinsics (K is zero): using the cell description's field of view"
        elif msg.distortion_model not in DISTORTION_MODELS:
            fault = (f"distortion model {msg.distortion_model!r} is not one of {', '.join(DISTORTION_MODELS)}: "
                     "using the cell description's field of view")
        if fault is not None:
            if fault not in self.info_refusals:
                self.info_refusals.add(fault)
                self.get_logger().warning(f"/cameras/{self.camera}/camera_info {fault}")
            return
        self.intrinsics[(int(msg.height), int(msg.width))] = (k, np.asarray(msg.d, dtype=np.float64))

    def on_image(self, msg: Image) -> None:
        try:
            rgb = image_array(msg)
        except ValueError as exc:  # an encoding we do not read, or a buffer that does not fit its size
            self.get_logger().error(f"/cameras/{self.camera}/image_raw: {exc}; image skipped")
            return
        size = rgb.shape[:2]
        if (self.calibration.height, self.calibration.width) != size:
            self.calibration = world_camera_calibration(self.camera, *size, self.cell)
        out = MarkerDetections(header=msg.header)
        out.header.frame_id = "world"
        found = detect_markers(rgb, self.calibration, self.lengths, intrinsics=self.intrinsics.get(size),
                               prefer_normal=self.prefer_normal)
        for marker_id, pose in sorted(found.items()):
            name, _length, offset = self.table[marker_id]
            rotation = np.asarray(pose.rotation).reshape(3, 3)
            centre = np.asarray(pose.position) + rotation @ offset
            p = Pose()
            p.position.x, p.position.y, p.position.z = (float(v) for v in centre)
            p.orientation.w, p.orientation.x, p.orientation.y, p.orientation.z = matrix_to_quaternion(rotation)
            out.names.append(name)
            out.poses.append(p)
            out.reprojection_px.append(pose.reprojection_px)
        self.pub.publish(out)


def main(args=None):
    raise SystemExit(run_node(FiducialTracker, args))


if __name__ == "__main__":
    main()
