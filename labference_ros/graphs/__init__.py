"""Graph descriptions: which nodes run, with which parameters and remappings."""
from __future__ import annotations

from .graph import Graph


def all_graphs() -> dict[str, Graph]:
    from .weighing_sim import GRAPH as weighing_sim

    return {g.name: g for g in (weighing_sim,)}


def graph_for(launch_name: str) -> Graph:
    """The graph behind 'weighing_sim.launch.py', 'launch/weighing_sim.launch.py' or 'weighing_sim'."""
    base = launch_name.rsplit("/", 1)[-1]
    for suffix in (".launch.py", ".py"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    graphs = all_graphs()
    if base not in graphs:
        known = ", ".join(g.launch_file for g in graphs.values())
        raise KeyError(f"no graph for {launch_name!r}; known launch files: {known}")
    return graphs[base]
