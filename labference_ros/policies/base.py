"""Tested systems: one interface, a registry by name, and the profile each
run records in run.json.

A system is reset per episode (session id + policy seed) and asked for an
action chunk [L x dim] per observation. Only systems registered as
privileged are ever handed an EvaluatorView; the runtime checks the flag,
not the system.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from labference_ros.core.action_spec import ActionSpec, reference_joint_spec
from labference_ros.core.observation import PolicyObservation


class EvaluationValidityError(RuntimeError):
    """The evaluation itself failed (transport, server, protocol), not the
    tested system's choice: the episode is invalid, not a policy failure."""


@dataclass(frozen=True)
class EvaluatorView:
    """Evaluator state a privileged system may read: the resolved instance
    and measured object positions with their support."""
    instance: object  # core.instance.WeighingInstance
    positions: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    on_pan: frozenset[str] = frozenset()
    t: float = 0.0


class TestedSystem:
    name: str = ""
    privileged: bool = False
    __test__ = False  # not a pytest class

    def __init__(self, spec: ActionSpec | None = None, **params):
        self.spec = spec or reference_joint_spec()
        self.params = dict(params)
        self.session_id = ""
        self.policy_seed = 0

    def reset(self, session_id: str, policy_seed: int) -> None:
        """New episode: forget queued plans and episode memory."""
        self.session_id, self.policy_seed = session_id, int(policy_seed)

    def receive_prefix(self, prefix: list[dict]) -> None:
        """A checkpoint's authorized history, after reset and before the first act:
        per step the PolicyObservation delivered then and the operation carried out.
        Stateless systems ignore it; stateful ones fold it into their memory."""

    def act(self, observation: PolicyObservation, evaluator: EvaluatorView | None = None) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def profile(self) -> dict:
        """The policy profile recorded in run.json."""
        return {"name": self.name, "privileged": self.privileged,
                "action_spec": self.spec.to_dict(), "action_spec_hash": self.spec.content_hash,
                "params": {k: v for k, v in sorted(self.params.items())},
                "implementation": f"{type(self).__module__}.{type(self).__qualname__}"}


_REGISTRY: dict[str, type[TestedSystem]] = {}


def register(name: str, privileged: bool = False) -> Callable[[type], type]:
    """Class decorator: make a tested system available by name."""
    def deco(cls: type[TestedSystem]) -> type[TestedSystem]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"tested system {name!r} is already registered")
        cls.name, cls.privileged = name, privileged
        _REGISTRY[name] = cls
        return cls
    return deco


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def make(name: str, spec: ActionSpec | None = None, **params) -> TestedSystem:
    _load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"unknown tested system {name!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[name](spec=spec, **params)


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators.
    from labference_ros.policies import agent, diagnostic, openpi, remote_http, scripted  # noqa: F401
