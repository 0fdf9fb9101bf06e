"""A simulator whose first LoadWorld reply never comes (a reply lost on the way, as Fast
DDS drops one sent before its writer matched the client); later LoadWorld requests and
SetSimulationState succeed. Asks /sim_loader/reset for one instance and prints "LOADS <n>"
with each LoadWorld request and "RESULT <json>" with the reset's answer.
usage: silent_first_world.py"""
from __future__ import annotations

import json

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("silent_first_world")
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.task import Future
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import LoadWorld, SetSimulationState

    from labference.srv import ResetEpisode
    from labference_ros.tasks.weighing.instances import generate

    loads = [0]

    async def on_load(request, response):
        loads[0] += 1
        print(f"LOADS {loads[0]}", flush=True)
        if loads[0] == 1:
            await Future()  # this request is never answered
        response.result.result = Result.RESULT_OK
        return response

    def on_state(request, response):
        response.result.result = Result.RESULT_OK
        return response

    # Reentrant: the later requests are served while the first one's answer waits for good.
    peer.node.create_service(LoadWorld, "/load_world", on_load, callback_group=ReentrantCallbackGroup())
    peer.node.create_service(SetSimulationState, "/set_simulation_state", on_state)
    instance = generate("basic", 1, task_seed=5, layout_seed=5, policy_seed=0)[0]
    answer = peer.call(ResetEpisode, "/sim_loader/reset",
                       ResetEpisode.Request(episode_id="0000_x", instance_json=instance.to_json()), timeout=60)
    print("RESULT " + json.dumps({"success": answer.success, "message": answer.message, "loads": loads[0]}),
          flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
