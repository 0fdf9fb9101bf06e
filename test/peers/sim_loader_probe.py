"""Asks sim_loader's /sim_loader/reset (the episode runner's reset through ROS 2
simulation_interfaces) against a realtime lab_sim: an instance, the same again, a broken
one, another instance; then the reset of a loader whose simulator offers nothing
(/nowhere_loader/reset). Prints "RESULT <json>": each answer, and how many tares
(/balance/tare, published by each reset lab_sim does) had arrived after it.
usage: sim_loader_probe.py"""
from __future__ import annotations

import json
import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("sim_loader_probe")
    from geometry_msgs.msg import WrenchStamped
    from labference.srv import ResetEpisode
    from rclpy.qos import QoSProfile

    from labference_ros.tasks.weighing.instances import generate

    first, second = generate("basic", 2, task_seed=4, layout_seed=4, policy_seed=0)
    tares = []
    tare_sub = peer.node.create_subscription(WrenchStamped, "/balance/tare", tares.append, QoSProfile(depth=10))
    matched = time.monotonic() + 60.0
    while not tare_sub.get_publisher_count() and time.monotonic() < matched:
        time.sleep(0.1)

    def reset(instance_json: str, episode: str, service: str = "/sim_loader/reset") -> dict:
        # Asked again after 30 s without an answer (a reply Fast DDS dropped): the same reset
        # is answered again, not done again.
        answer = peer.call(ResetEpisode, service, ResetEpisode.Request(episode_id=episode,
                                                                       instance_json=instance_json), resend_s=30.0)
        settle = time.monotonic() + 1.5  # a tare published by this reset arrives meanwhile
        while time.monotonic() < settle:
            time.sleep(0.1)
        return {"success": answer.success, "message": answer.message, "layout_hash": answer.layout_hash,
                "scene_hash": answer.scene_hash, "sim_time": answer.sim_time, "tares": len(tares)}

    out = {"layout_hashes": [first.layout_hash, second.layout_hash],
           "first": reset(first.to_json(), "0000_a"),
           "repeated": reset(first.to_json(), "0000_a"),
           "broken": reset("{not json", "0001_b"),
           "second": reset(second.to_json(), "0002_c"),
           "no_simulator": reset(first.to_json(), "0003_d", "/nowhere_loader/reset")}
    print("RESULT " + json.dumps(out), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
