"""Task families, found by the task name their contracts carry.

The registry maps a name to a module path and imports a family only when it
is first asked for. A family outside this project plugs in through the
``labference.tasks`` entry-point group (``name = "package.module"``, a module
exposing ``FAMILY``).
"""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from labference_ros.tasks.base import TaskFamily

ENTRY_POINT_GROUP = "labference.tasks"

# name -> module exposing FAMILY
BUILTIN: dict[str, str] = {
    "feedback_weighing": "labference_ros.tasks.weighing",
    "centrifuge_loading": "labference_ros.tasks.centrifuge",
    "placement_recall": "labference_ros.tasks.placement_recall",
}
# The task a command, a graph description or a node runs when it is given none (the
# launcher's and the CLI's default task): the one place a shared layer names a family.
DEFAULT_FAMILY = "feedback_weighing"
# Short names a user may type (e.g. in campaign specs).
ALIASES: dict[str, str] = {"weighing": "feedback_weighing", "centrifuge": "centrifuge_loading",
                           "placement": "placement_recall"}

_LOADED: dict[str, TaskFamily] = {}


def _modules() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def available() -> list[str]:
    return sorted(_modules())


def family(name: str) -> TaskFamily:
    """The task family registered as ``name`` (or one of its aliases)."""
    name = ALIASES.get(name, name)
    if name not in _LOADED:
        modules = _modules()
        if name not in modules:
            raise KeyError(f"unknown task family {name!r}; registered: {sorted(modules)}")
        _LOADED[name] = importlib.import_module(modules[name]).FAMILY
    return _LOADED[name]


def family_of(instance) -> TaskFamily:
    """The registered family whose instances are of `instance`'s type."""
    for name in available():
        fam = family(name)
        if isinstance(instance, fam.instance_type):
            return fam
    raise KeyError(f"no registered task family has instances of type {type(instance).__name__}")


def family_of_contract_id(contract_id: str) -> TaskFamily:
    """The family of a recorded contract id ("feedback_weighing.basic@1.1.0")."""
    return family(contract_id.split(".", 1)[0])


__all__ = ["DEFAULT_FAMILY", "ENTRY_POINT_GROUP", "TaskFamily", "available", "family", "family_of", "family_of_contract_id"]
