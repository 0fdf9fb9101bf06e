"""Centrifuge loading against the simulator: the one description of its graph.

launch/centrifuge_sim.launch.py is generated from this file
(python -m labference_ros.graphs.launchgen) and the embedded launcher
(`labference launch centrifuge_sim.launch.py`) starts the same nodes. The weighing
graph's nodes without the balance (the rotor needs none) and without the RViz
monitor (its robot description is the weighing cell's); every task-aware node
loads the centrifuge family.
"""
from __future__ import annotations

import dataclasses

from . import weighing_sim
from .graph import Graph, LaunchArgument, for_task

TASK = "centrifuge_loading"
SYSTEMS = ("scripted_expert, plan_follower, dropper, hurried, second_guess, impatient_expert, opposite_from_pixels, "
           "http, openpi, agent")
ARGUMENTS = tuple(
    dataclasses.replace(a, description=f"Tested system (policy registry name): {SYSTEMS}") if a.name == "system"
    else dataclasses.replace(a, description="Task condition of generated instances (hidden_event: basic, started "
                                            "only once the centrifuge's ready lamp lights at a hidden time; "
                                            "heldout_tubes: basic's instances with the held-out tube pair, "
                                            "slimmer and longer with red caps)",
                             choices=(*a.choices, "hidden_event", "heldout_tubes")) if a.name == "condition"
    else a for a in weighing_sim.ARGUMENTS if a.name != "monitor")


NODES = for_task(weighing_sim.NODES, TASK, leave_out=("balance", "monitor"))

GRAPH = Graph(name="centrifuge_sim", package="labference",
              description="Centrifuge loading in simulation: simulator, referee, policy bridge, episode runner",
              arguments=ARGUMENTS, nodes=NODES, task=TASK)

__all__ = ["ARGUMENTS", "GRAPH", "LaunchArgument", "TASK"]
