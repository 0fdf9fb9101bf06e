"""Graph descriptions: which nodes run, with which parameters and remappings."""
from __future__ import annotations

from .graph import Graph


def all_graphs() -> dict[str, Graph]:
    """Every task family's graphs (each family lists its graph modules)."""
    import importlib

    from labference_ros import tasks

    found = {}
    for name in tasks.available():
        for module in tasks.family(name).graphs:
            graph = importlib.import_module(module).GRAPH
            found[graph.name] = graph
    return found


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
