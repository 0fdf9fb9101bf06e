"""Feedback weighing against a simulator this graph does not start: Isaac Sim (or Gazebo,
O3DE, any ROS 2 simulator offering simulation_interfaces and the standard topics).

launch/weighing_isaac.launch.py is generated from this file. It is the simulator-neutral
graph (graphs/weighing_external.py) without lab_sim and without the shadow referee (it
scores from lab_sim's own state, which another simulator does not offer):
- the simulator, started beforehand with the cell's stage (`labference cell export
  --format usd`), publishes /clock, /joint_states, the cameras
  (/cameras/<name>/image_raw) and the load cell's /balance/wrench, follows
  /panda_arm_controller/joint_trajectory and /panda_gripper/command, and serves
  simulation_interfaces at `sim_namespace` (Isaac Sim's simulation-control extension:
  the root);
- sim_loader loads each instance through LoadWorld and plays it; entity_tracker polls
  GetEntitiesStates for the objects' poses; the balance node reads the wrench; the world
  estimator builds the referee's world state, checks the reading and confirms each
  scene before its episode starts;
- the referee, the policy bridge (realtime: the simulator runs on its own clock), the
  Oracle, the recorder and the runner are the other graphs' own.
Run `labference sim-check` against the simulator first. docs/simulators.md says what
was checked here (this graph against lab_sim started on its own, standing in for Isaac
Sim) and what needs an RTX machine.
"""
from __future__ import annotations

import dataclasses

from . import weighing_external
from .graph import Graph, LaunchArgument, NodeSpec, Param

TASK = weighing_external.TASK
# The empty pan's weight on the load cell in the cell's scene (lab_sim's measured tare; a test
# keeps the two equal).
EMPTY_PAN_FORCE_N = "1.5347873918"
# lab_sim's own arguments: the simulator runs outside this graph at its own pace.
_DROPPED = ("realtime_factor",)
# What the arguments say of lab_sim, said of the simulator outside.
_HELP = {
    "setup_timeout_s": "Seconds for the estimator to confirm the simulator's loaded instance from its entity states "
                       "before the episode is recorded as not started",
    "camera_rate": "The simulator's camera rate in Hz of sim time (the policy bridge's observation rate)",
    "image_width": "Width in pixels of the simulator's camera images (recorded with the run)",
    "image_height": "Height in pixels of the simulator's camera images (recorded with the run)",
}
ARGUMENTS = tuple(dataclasses.replace(a, description=_HELP.get(a.name, a.description))
                  for a in weighing_external.ARGUMENTS if a.name not in _DROPPED) + (
    LaunchArgument("sim_namespace", "", "Namespace of the simulator's simulation_interfaces services ('' the "
                   "root, as Isaac Sim's simulation-control extension serves them)"),
    LaunchArgument("empty_pan_force_n", EMPTY_PAN_FORCE_N, "The load cell's force with the pan empty (N, +z): "
                   "the balance's tare, which lab_sim measures and publishes itself; the cell's pan as `labference "
                   "cell export` writes it weighs this much"),
)


def _node(spec: NodeSpec) -> tuple[NodeSpec, ...]:
    if spec.name in ("lab_sim", "shadow_referee"):
        return ()
    if spec.name == "sim_balance":  # no /balance/tare from another simulator: the pan's weight is known
        return (dataclasses.replace(spec, parameters={**spec.parameters,
                                                      "empty_force_n": Param("empty_pan_force_n", float)}),)
    if spec.name in ("sim_loader", "entity_tracker"):  # the simulator's services, where it serves them
        return (dataclasses.replace(spec, parameters={**spec.parameters, "namespace": Param("sim_namespace")}),)
    if spec.name == "policy_bridge":
        # No shadow referee to mirror the operations to.
        return (dataclasses.replace(spec, parameters={k: v for k, v in spec.parameters.items()
                                                      if k != "report_mirror"}),)
    if spec.name == "episode_runner":
        return (dataclasses.replace(spec, parameters={**spec.parameters, "shadow_referee": False}),)
    return (spec,)


NODES = tuple(out for spec in weighing_external.NODES for out in _node(spec))

GRAPH = Graph(name="weighing_isaac", package="labference",
              description="Feedback weighing against a simulator started outside the graph (Isaac Sim, Gazebo, "
                          "O3DE): instances through simulation_interfaces' LoadWorld, object poses from its entity "
                          "states, the balance over its wrench, the sensor-only world estimator and referee",
              arguments=ARGUMENTS, nodes=NODES, task=TASK)
