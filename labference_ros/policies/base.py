"""The tested-system registry: name -> "module:Class", imported on first use.

Looking a system up imports only its own module (and what that module
needs): `http` never pulls in MuJoCo or OpenCV. Entries come from three
places, in this order of precedence:
- the remote adapters below (http, openpi, agent);
- every task family's reference systems (labference_ros.tasks);
- the ``labference.systems`` entry-point group, so a user's own system plugs
  in without editing the project (``my_policy = "my_pkg.policy:MyPolicy"``).
``register`` adds a class at run time (tests, notebooks).
"""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Callable

from labference_ros.core.action_spec import ActionSpec
from labference_ros.core.system import EvaluationValidityError, EvaluatorView, TestedSystem
from labference_ros.tasks import DEFAULT_FAMILY

ENTRY_POINT_GROUP = "labference.systems"

REMOTE_SYSTEMS: dict[str, str] = {
    "http": "labference_ros.policies.remote_http:HttpPolicy",
    "openpi": "labference_ros.policies.openpi:OpenPiPolicy",
    "groot": "labference_ros.policies.groot:GrootPolicy",
    "agent": "labference_ros.policies.agent.driver:AgentSystem",
}

_RUNTIME: dict[str, type[TestedSystem]] = {}


def register(name: str, privileged: bool = False) -> Callable[[type], type]:
    """Class decorator: make a class available by name at run time."""
    def deco(cls: type[TestedSystem]) -> type[TestedSystem]:
        if name in _RUNTIME and _RUNTIME[name] is not cls:
            raise ValueError(f"tested system {name!r} is already registered")
        cls.name, cls.privileged = name, privileged
        _RUNTIME[name] = cls
        return cls
    return deco


DEFAULT_TASK = DEFAULT_FAMILY  # a system looked up without a task: its name in that family


def entries(task: str = DEFAULT_TASK) -> dict[str, str]:
    """Every known system name with the "module:Class" it loads, for a graph of `task`:
    a reference system's name means that family's system (both families have a
    scripted_expert), then the remote adapters, the other families' systems and the
    entry points."""
    from labference_ros import tasks

    found = dict(tasks.family(task).reference_systems)
    for name, target in REMOTE_SYSTEMS.items():
        found.setdefault(name, target)
    for family_name in tasks.available():
        for name, target in tasks.family(family_name).reference_systems.items():
            found.setdefault(name, target)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def available(task: str = DEFAULT_TASK) -> list[str]:
    return sorted(set(entries(task)) | set(_RUNTIME))


def system_class(name: str, task: str = DEFAULT_TASK) -> type[TestedSystem]:
    """The class registered as ``name`` (for a graph of `task`); imports its module on first use."""
    if name in _RUNTIME:
        return _RUNTIME[name]
    known = entries(task)
    if name not in known:
        raise KeyError(f"unknown tested system {name!r}; registered: {available()}")
    module_name, _, class_name = known[name].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, TestedSystem)):
        raise TypeError(f"{known[name]} (tested system {name!r}) is not a TestedSystem subclass")
    cls.name = name
    return cls


def make(name: str, spec: ActionSpec | None = None, task: str = DEFAULT_TASK, **params) -> TestedSystem:
    return system_class(name, task)(spec=spec, **params)


__all__ = ["ENTRY_POINT_GROUP", "EvaluationValidityError", "EvaluatorView", "TestedSystem", "available",
           "entries", "make", "register", "system_class"]
