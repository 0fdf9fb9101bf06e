"""Drives the rehearsal's sensing chain (lab_sim with fiducials, the simulated balance,
fiducial_tracker on the overhead camera, world_estimator on that camera's rays): resets
lab_sim to an instance, advances at least 1.5 s of sim time (on until the tracker's
detections come back), then asks the estimator's scene check for that instance and
for another layout's. Prints "RESULT <json>"."""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession

# Detection messages the estimator should have had before its scene check.
MIN_DETECTIONS = 3


def wait_until_the_chain_is_connected(node, markers, timeout_s: float = 120.0) -> bool:
    """The tracker's detections matched here, and lab_sim's overhead images and the
    detections both have their readers discovered: the images are volatile, and a
    tracker that starts after the advances (a loaded machine) would see none. What
    this node discovers is a proxy for lab_sim's own match, which may lag a little."""
    def connected() -> bool:
        if markers.get_publisher_count() == 0:
            return False
        readers = {topic: {i.node_name for i in node.get_subscriptions_info_by_topic(topic)}
                   for topic in ("/cameras/overhead/image_raw", "/markers/poses")}
        writers = {i.node_name for i in node.get_publishers_info_by_topic("/cameras/overhead/image_raw")}
        return ("fiducial_tracker" in readers["/cameras/overhead/image_raw"] and "lab_sim" in writers
                and any(n.startswith("world_estimator") for n in readers["/markers/poses"]))

    deadline = time.monotonic() + timeout_s
    while not connected() and time.monotonic() < deadline:
        time.sleep(0.1)
    return connected()


def main() -> int:
    from labference.msg import MarkerDetections
    from labference.srv import Advance, ResetEpisode
    from labference_ros.tasks import family
    from rclpy.qos import QoSProfile

    weighing = family("feedback_weighing")
    instance = weighing.generate("extended", 1, task_seed=5, layout_seed=5, policy_seed=0)[0]
    other = weighing.generate("basic", 1, task_seed=6, layout_seed=6, policy_seed=0)[0]
    peer = PeerSession("rehearsal_sensing_probe")
    seen: list = []
    markers = peer.node.create_subscription(MarkerDetections, "/markers/poses", seen.append, QoSProfile(depth=50))
    connected = wait_until_the_chain_is_connected(peer.node, markers)
    answer = peer.call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(episode_id="ep0",
                                                                            instance_json=instance.to_json()))
    result: dict = {"reset": answer.success, "connected": connected}
    # At least 1.5 s of sim, and on until the tracker's detections have come back
    # (bounded): lab_sim's own match with the tracker can lag what this node
    # discovers, and images sent before it are lost (volatile).
    advanced = 0
    deadline = time.monotonic() + 120
    while (advanced < 15 or len(seen) < MIN_DETECTIONS) and time.monotonic() < deadline:
        peer.call(Advance, "/lab_sim/advance", Advance.Request(duration_s=0.1))
        advanced += 1
        time.sleep(0.15)  # the overhead image is rendered, sent and read before physics moves on
    result["advances"] = advanced
    result["names_seen"] = sorted({n for m in seen for n in m.names})
    result["frames"] = len(seen)
    for key, checked in (("same", instance), ("other", other)):
        check = peer.call(ResetEpisode, "/world_estimator/reset",
                          ResetEpisode.Request(episode_id="ep0", instance_json=checked.to_json()))
        result[key] = {"success": check.success, "message": check.message}
    print("RESULT " + json.dumps(result), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
