"""Task families, found by the task name their contracts carry.

The registry maps a name to a module path and imports a family only when it
is first asked for. A family outside this project plugs in through the
``labference.tasks`` entry-point group (``name = "package.module"``, a module
exposing ``FAMILY``), or, without installing anything, through the
``LABFERENCE_TASKS`` environment variable: ``NAME=MODULE`` or ``NAME=FOLDER``
entries joined by ``os.pathsep``, where FOLDER is a package folder whose parent
goes on sys.path when the family is first asked for. Node processes inherit the
variable, so a graph's every node finds the same family.
"""
from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path

from labference_ros.tasks.base import TaskFamily

ENTRY_POINT_GROUP = "labference.tasks"
PLUGIN_ENV = "LABFERENCE_TASKS"

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


def _plugin_entries() -> dict[str, str]:
    """LABFERENCE_TASKS as name -> module or package folder; a malformed entry is a clear error."""
    found = {}
    for entry in filter(None, os.environ.get(PLUGIN_ENV, "").split(os.pathsep)):
        name, sep, target = entry.partition("=")
        if not (sep and name.strip() and target.strip()):
            raise ValueError(f"{PLUGIN_ENV}: {entry!r} is not NAME=MODULE or NAME=FOLDER")
        found[name.strip()] = target.strip()
    return found


def _module_of(target: str) -> str:
    """A plug-in's module: a package folder's name, its parent put on sys.path; else the module path."""
    folder = Path(target)
    if os.sep not in target or not folder.is_dir():
        return target
    parent = str(folder.resolve().parent)
    if parent not in sys.path:
        sys.path.append(parent)  # after everything installed: its siblings shadow nothing
    return folder.resolve().name


def _modules() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    for name, target in _plugin_entries().items():
        found.setdefault(name, target)
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
        _LOADED[name] = importlib.import_module(_module_of(modules[name])).FAMILY
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


__all__ = ["DEFAULT_FAMILY", "ENTRY_POINT_GROUP", "PLUGIN_ENV", "TaskFamily", "available", "family", "family_of", "family_of_contract_id"]
