"""Placement recall against the simulator: the one description of its graph.

launch/placement_recall_sim.launch.py is generated from this file
(python -m labference_ros.graphs.launchgen) and the embedded launcher
(`labference launch placement_recall_sim.launch.py`) starts the same nodes. The
weighing graph's nodes without the balance and without the RViz monitor (its robot
description is the weighing cell's); every task-aware node loads the placement-recall
family. Its conditions name the setting and the caps ("extended-same"), and
heldout_tubes is basic-same with the held-out tubes (a held-out object binding); an episode
needs time for two transfers and the occlusion, hence the longer deadline.
"""
from __future__ import annotations

import dataclasses

from . import weighing_sim
from .graph import Graph, LaunchArgument, for_task

TASK = "placement_recall"
SYSTEMS = "scripted_expert, label_memory, label_memory_pixels, world_position, cap_colour, cap_colour_pixels, dropper, second_guess, hurried, http, openpi, agent"
CONDITIONS = ("basic-same", "basic-distinct", "extended-same", "extended-distinct", "heldout_tubes")


def _argument(a: LaunchArgument) -> LaunchArgument:
    if a.name == "system":
        return dataclasses.replace(a, description=f"Tested system (policy registry name): {SYSTEMS}")
    if a.name == "condition":
        return dataclasses.replace(a, default="basic-same", choices=CONDITIONS,
                                   description="Task condition of generated instances: setting (basic, extended) "
                                               "and caps (same, distinct); heldout_tubes: basic-same's instances "
                                               "with the held-out tubes, slimmer and longer")
    if a.name == "deadline_s":
        return dataclasses.replace(a, default="90")
    return a


ARGUMENTS = tuple(_argument(a) for a in weighing_sim.ARGUMENTS if a.name != "monitor")


NODES = for_task(weighing_sim.NODES, TASK, leave_out=("balance", "monitor"))

GRAPH = Graph(name="placement_recall_sim", package="labference",
              description="Placement recall in simulation: simulator, referee, policy bridge, episode runner",
              arguments=ARGUMENTS, nodes=NODES, task=TASK)

__all__ = ["ARGUMENTS", "GRAPH", "LaunchArgument", "TASK"]
