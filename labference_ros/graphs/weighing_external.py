"""Feedback weighing with the referee on what any ROS 2 simulator offers: the
simulator-neutral referee path, run here against lab_sim beside a privileged shadow.

launch/weighing_external.launch.py is generated from this file. It is the rehearsal
graph (graphs/weighing_rehearsal.py) with the markers replaced by the simulator's
entity states, so its referee reads nothing that only lab_sim can produce:
- object poses: entity_tracker asks the simulator's ROS 2 simulation_interfaces
  GetEntitiesStates (20 Hz) and publishes them on /markers/poses;
- the balance: the balance node (sim_balance) over the simulator's standard load-cell
  wrench (/balance/wrench, geometry_msgs/WrenchStamped), on /sim_balance/reading;
- joints: /joint_states (sensor_msgs/JointState);
- world_estimator builds the referee's /evaluator/world_state from those, as on a real
  cell, and the reading it checked against the poses is the referee's /balance/reading;
- shadow_referee (the same node, remapped to /shadow_referee/*) scores the same
  episodes from lab_sim's privileged world state and the unchecked reading; `labference agreement RUN_DIR`
  compares the two verdicts per episode.
- the scene: the episode runner's reset goes to sim_loader, which loads the instance
  through simulation_interfaces' LoadWorld and plays it (SetSimulationState); the
  episode starts once the estimator's scene check confirms it from the entity states.
- a privileged tested system (scripted_expert) reads the estimator's world state, as on
  a real cell.
Only the shadow referee reads lab_sim's own state. docs/simulators.md says what another
simulator must offer.
"""
from __future__ import annotations

import dataclasses

from . import weighing_rehearsal, weighing_sim
from .graph import Graph, LaunchArgument, NodeSpec, Param

TASK = weighing_sim.TASK
_DROPPED = ("marker_camera_width", "marker_camera_height", "balance_port")
ARGUMENTS = tuple(a for a in weighing_rehearsal.ARGUMENTS if a.name not in _DROPPED) + (
    LaunchArgument("entity_rate", "20", "How often (Hz, wall time) entity_tracker asks the simulator for its "
                   "entity states"),
    LaunchArgument("load_timeout_s", "20", "Seconds sim_loader gives an instance's load (LoadWorld, play, the "
                   "first /clock) before it refuses the reset; keep it below service_timeout_s"),
)
ARGUMENTS = tuple(dataclasses.replace(a, default="1.0") if a.name == "realtime_factor" else a for a in ARGUMENTS)
SIM_TIME = weighing_rehearsal.SIM_TIME
# An object pose older than this counts as unseen: a few entity polls of a loaded machine.
POSE_TIMEOUT_S = 0.35


def _node(spec: NodeSpec) -> tuple[NodeSpec, ...]:
    if spec.name == "lab_sim":
        params = {k: v for k, v in spec.parameters.items() if not k.startswith("marker_camera")}
        return (dataclasses.replace(spec, parameters={**params, "fiducials": False}),)
    if spec.name in ("sics_emulator", "balance"):  # no serial balance: the balance node reads the wrench
        return ()
    if spec.name == "fiducial_tracker":
        return (NodeSpec("entity_tracker", "entity_tracker", parameters={"rate": Param("entity_rate", float)}),)
    if spec.name == "world_estimator":
        # It reads the balance node's reading and publishes the checked one as the referee's /balance/reading.
        return (NodeSpec("world_estimator", "world_estimator",
                         parameters={"task": TASK, "marker_camera": "", "marker_timeout_s": POSE_TIMEOUT_S,
                                     **SIM_TIME},
                         remappings=(("/balance/reading", "/sim_balance/reading"),
                                     ("/evaluator/balance_reading", "/balance/reading"))),)
    if spec.name == "referee":
        return (dataclasses.replace(spec, remappings=()),)
    if spec.name == "policy_bridge":
        # A privileged tested system reads the estimator's world state, as on a real cell: lab_sim's
        # own is the shadow referee's alone.
        return (dataclasses.replace(spec, remappings=()),)
    if spec.name == "episode_runner":
        # The scene comes through simulation_interfaces' LoadWorld, not lab_sim's own reset.
        loader = NodeSpec("sim_loader", "sim_loader",
                          parameters={"task": TASK, "reset_timeout_s": Param("load_timeout_s", float)})
        runner = dataclasses.replace(spec, parameters={**spec.parameters, "scene_node": "sim_loader"},
                                     remappings=(("/lab_sim/reset", "/sim_loader/reset"),))
        return (loader, runner)
    return (spec,)


def _nodes() -> tuple[NodeSpec, ...]:
    out = []
    for spec in weighing_rehearsal.NODES:
        out.extend(_node(spec))
    return tuple(out)


NODES = _nodes()

GRAPH = Graph(name="weighing_external", package="labference",
              description="Feedback weighing scored on what any ROS 2 simulator offers: object poses from "
                          "simulation_interfaces entity states, the balance over the standard wrench, the "
                          "sensor-only world estimator; a shadow referee scores from lab_sim's privileged state",
              arguments=ARGUMENTS, nodes=NODES, task=TASK)
