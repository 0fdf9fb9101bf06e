"""Plays a calibrated camera for the fiducial_tracker node: publishes the front camera's
1280x960 rendering of a 4 cm marker (id 7) lying on the table (test/perception/
test_fiducials.py's scene), once as rgb8 and once as bgr8, then an image whose
buffer is too short for its size, then the image with its left 160 columns cropped
away, sent with a camera_info whose K has the principal point moved to match; prints "RESULT <json>" with what came back on
/markers/poses for each."""
from __future__ import annotations

import json
import pathlib
import sys
import time

from peer_session import PeerSession

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "perception"))


def main() -> int:
    from test_fiducials import render_front

    rgb = render_front(960, 1280)
    peer = PeerSession("tracker_probe")
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import CameraInfo, Image

    from labference_ros.cell.description import weighing_cell
    from labference_ros.perception.camera import world_camera_calibration

    from labference.msg import MarkerDetections

    node = peer.node
    pub = node.create_publisher(Image, "/cameras/front/image_raw",
                                QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE))
    info_pub = node.create_publisher(CameraInfo, "/cameras/front/camera_info", QoSProfile(depth=5))
    got: list = []
    node.create_subscription(MarkerDetections, "/markers/poses", got.append, QoSProfile(depth=50))
    deadline = time.monotonic() + 60
    while pub.get_subscription_count() == 0 or node.count_publishers("/markers/poses") == 0:
        if time.monotonic() > deadline:
            print("RESULT {}", flush=True)
            return 1
        time.sleep(0.1)
    time.sleep(1.0)

    def send(encoding: str, pixels, sec: int, truncate: bool = False, attempts: int = 50, info=None):
        data = pixels.tobytes()
        img = Image(height=pixels.shape[0], width=pixels.shape[1], encoding=encoding, is_bigendian=0,
                    step=pixels.shape[1] * 3, data=data[: len(data) // 2] if truncate else data)
        img.header.stamp.sec = sec
        for _ in range(attempts):  # until an answer to this image (its stamp) comes back
            if info is not None:
                info_pub.publish(info)
                time.sleep(0.05)
            pub.publish(img)
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                answers = [m for m in list(got) if m.header.stamp.sec == sec]
                if answers:
                    m = answers[0]
                    return {"sec": m.header.stamp.sec, "names": list(m.names),
                            "positions": [[p.position.x, p.position.y, p.position.z] for p in m.poses],
                            "quaternions": [[p.orientation.w, p.orientation.x, p.orientation.y,
                                             p.orientation.z] for p in m.poses]}
                time.sleep(0.01)
        return None

    result = {"rgb8": send("rgb8", rgb, 11), "bgr8": send("bgr8", rgb[..., ::-1].copy(), 12),
              "truncated": send("rgb8", rgb, 13, truncate=True, attempts=6)}
    result["after_truncated"] = send("rgb8", rgb, 14)
    cropped = rgb[:, 160:].copy()
    f = world_camera_calibration("front", 960, 1280, weighing_cell()).focal_px
    info = CameraInfo(height=960, width=1120, distortion_model="plumb_bob", d=[0.0] * 5,
                      k=[f, 0.0, 640.0 - 160.0, 0.0, f, 480.0, 0.0, 0.0, 1.0])
    result["cropped_with_info"] = send("rgb8", cropped, 15, info=info)
    print("RESULT " + json.dumps(result), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
