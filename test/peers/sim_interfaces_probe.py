"""Drives lab_sim through ROS 2 simulation_interfaces only and prints what it answered.

One line "RESULT <json>" with, in order of the calls: the state and the entity states
before a world is loaded, the features stated, LoadWorld, the entities (all, robots only, a name
filter), their states, a StepSimulation, a SimulateSteps goal (its feedback and
result), SetEntityState and GetEntityState of the sample, ResetSimulation and the
sample's pose after it, a refused SetSimulationState and an unknown entity."""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("sim_interfaces_probe")
    from rclpy.action import ActionClient
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import EntityCategory, SimulationState
    from simulation_interfaces.srv import (GetEntities, GetEntitiesStates, GetEntityState, GetSimulationState,
                                           GetSimulatorFeatures, LoadWorld, ResetSimulation, SetEntityState,
                                           SetSimulationState, StepSimulation)

    from labference_ros.msgconv import stamp_to_s
    from labference_ros.tasks.weighing.instances import generate

    instance = generate("basic", 1, task_seed=3, layout_seed=3, policy_seed=3)[0]
    out: dict = {}

    def ask(srv_type, service, request):
        """A call safe to repeat (reads, loads, absolute sets, resets): asked again after 5 s
        without an answer, as a reply Fast DDS dropped never comes (docs/pitfalls.md)."""
        return peer.call(srv_type, service, request, resend_s=5.0)

    def result(answer) -> list:
        return [int(answer.result.result), answer.result.error_message]

    def sample_state() -> dict:
        answer = ask(GetEntityState, "/get_entity_state", GetEntityState.Request(entity="sample"))
        p = answer.state.pose.position
        return {"result": result(answer), "t": stamp_to_s(answer.state.header.stamp),
                "position": [p.x, p.y, p.z], "frame": answer.state.header.frame_id}

    out["state_before"] = int(ask(GetSimulationState, "/get_simulation_state",
                                        GetSimulationState.Request()).state.state)
    before = ask(GetEntitiesStates, "/get_entities_states", GetEntitiesStates.Request())
    out["states_before"] = result(before) + [list(before.entities)]
    features = ask(GetSimulatorFeatures, "/get_simulator_features", GetSimulatorFeatures.Request()).features
    out["features"] = sorted(int(f) for f in features.features)
    load = LoadWorld.Request()
    load.world_resource.resource_string = instance.to_json()
    loaded = ask(LoadWorld, "/load_world", load)
    out["load_world"] = result(loaded) + [loaded.world.name, instance.instance_id]
    out["state_loaded"] = int(ask(GetSimulationState, "/get_simulation_state",
                                        GetSimulationState.Request()).state.state)
    out["entities"] = list(ask(GetEntities, "/get_entities", GetEntities.Request()).entities)
    robots = GetEntities.Request()
    robots.filters.categories = [EntityCategory(category=EntityCategory.CATEGORY_ROBOT)]
    out["robots"] = list(ask(GetEntities, "/get_entities", robots).entities)
    named = GetEntities.Request()
    named.filters.filter = "^std_"
    out["standards"] = list(ask(GetEntities, "/get_entities", named).entities)
    states = ask(GetEntitiesStates, "/get_entities_states", GetEntitiesStates.Request())
    out["states"] = {name: [stamp_to_s(s.header.stamp), s.pose.position.z]
                     for name, s in zip(states.entities, states.states)}
    out["start"] = sample_state()
    # A step of none (safe to repeat) first: the counted step's reply must not be a first one.
    ask(StepSimulation, "/step_simulation", StepSimulation.Request(steps=0))
    out["step"] = result(peer.call(StepSimulation, "/step_simulation", StepSimulation.Request(steps=50)))
    out["after_step"] = sample_state()

    client = ActionClient(peer.node, SimulateSteps, "/simulate_steps")
    if not client.wait_for_server(timeout_sec=30):
        raise RuntimeError("no SimulateSteps action server")
    # Feedback goes out once per 50 steps on a topic of its own, which the server's writer and
    # this client's reader match apart from the action's services: the reader sees the writer
    # and a goal of no steps (no feedback, no physics) goes round before the goal whose every
    # feedback is counted.
    deadline = time.monotonic() + 30
    while not peer.node.count_publishers("/simulate_steps/_action/feedback") and time.monotonic() < deadline:
        time.sleep(0.05)
    if not peer.node.count_publishers("/simulate_steps/_action/feedback"):
        raise RuntimeError("no SimulateSteps feedback publisher within 30 s")
    warm_up = peer.wait(client.send_goal_async(SimulateSteps.Goal(steps=0)), 60)
    if warm_up is None or peer.wait(warm_up.get_result_async(), 60) is None:
        raise RuntimeError("the SimulateSteps goal of no steps got no answer within 60 s")
    feedback: list = []
    goal = peer.wait(client.send_goal_async(SimulateSteps.Goal(steps=120),
                                            feedback_callback=lambda f: feedback.append(
                                                [int(f.feedback.completed_steps), int(f.feedback.remaining_steps)])),
                     60)
    action_result = peer.wait(goal.get_result_async(), 60)
    out["simulate_steps"] = {"accepted": goal.accepted, "result": [int(action_result.result.result.result),
                                                                   action_result.result.result.error_message],
                             "feedback": feedback}
    out["after_action"] = sample_state()

    moved = SetEntityState.Request(entity="sample", set_pose=True)
    moved.state.pose.position.x, moved.state.pose.position.y = out["start"]["position"][:2]
    moved.state.pose.position.z = out["start"]["position"][2] + 0.05
    moved.state.pose.orientation.w = 1.0
    out["set_pose"] = result(ask(SetEntityState, "/set_entity_state", moved))
    out["after_set"] = sample_state()
    fixture = SetEntityState.Request(entity="pan", set_pose=True)
    fixture.state.pose.orientation.w = 1.0
    out["set_fixture"] = result(ask(SetEntityState, "/set_entity_state", fixture))
    out["reset"] = result(ask(ResetSimulation, "/reset_simulation", ResetSimulation.Request()))
    out["after_reset"] = sample_state()
    play = SetSimulationState.Request()
    play.state.state = SimulationState.STATE_PLAYING
    out["play"] = result(ask(SetSimulationState, "/set_simulation_state", play))
    out["unknown"] = result(ask(GetEntityState, "/get_entity_state", GetEntityState.Request(entity="nothing")))
    print("RESULT " + json.dumps(out), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
