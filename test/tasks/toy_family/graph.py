"""The toy family's graph: the weighing graph's nodes without the balance and the
monitor, every task-aware node loading toy_shuttle (as the centrifuge's graph does)."""
from __future__ import annotations

from labference_ros.graphs import weighing_sim
from labference_ros.graphs.graph import Graph, for_task

TASK = "toy_shuttle"
ARGUMENTS = tuple(a for a in weighing_sim.ARGUMENTS if a.name != "monitor")
GRAPH = Graph(name="toy_sim", package="labference", description="The toy shuttle family in simulation",
              arguments=ARGUMENTS, nodes=for_task(weighing_sim.NODES, TASK, leave_out=("balance", "monitor")),
              task=TASK)
