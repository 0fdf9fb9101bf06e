"""Serves /get_entities_states and never answers its first request (a reply lost on the
way, as Fast DDS drops one sent before its writer matched the client); every later one
gets one object, `sample`, at (0.4, 0.1, 0.05). Prints "POSES <n>" each time a
/markers/poses message arrives, and "ASKED <n>" with each request.
usage: silent_first_entities.py"""
from __future__ import annotations

import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("silent_first_entities")
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.task import Future
    from simulation_interfaces.msg import EntityState, Result
    from simulation_interfaces.srv import GetEntitiesStates

    from labference.msg import MarkerDetections

    asked = [0]
    poses = [0]

    async def on_states(request, response):
        asked[0] += 1
        print(f"ASKED {asked[0]}", flush=True)
        if asked[0] == 1:
            await Future()  # this request is never answered
        state = EntityState()
        state.pose.position.x, state.pose.position.y, state.pose.position.z = 0.4, 0.1, 0.05
        state.header.stamp.sec = asked[0]
        response.result.result = Result.RESULT_OK
        response.entities, response.states = ["sample"], [state]
        return response

    def on_poses(msg):
        poses[0] += 1
        print(f"POSES {poses[0]} {list(msg.names)}", flush=True)

    # Reentrant: the later requests are served while the first one's answer waits for good.
    peer.node.create_service(GetEntitiesStates, "/get_entities_states", on_states,
                             callback_group=ReentrantCallbackGroup())
    peer.node.create_subscription(MarkerDetections, "/markers/poses", on_poses, 10)
    time.sleep(120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
