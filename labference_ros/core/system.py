"""The tested-system interface: what every adapter implements, the optional
hooks the graph calls (with their defaults), and the profile each run records
in run.json. The registry by name is in labference_ros.policies.

A system is reset per episode (session id + policy seed) and asked for an
action chunk [L x dim] per observation. Only systems registered as
privileged are ever handed an EvaluatorView; the runtime checks the flag,
not the system.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labference_ros.core.action_spec import ActionSpec, reference_joint_spec
from labference_ros.core.observation import PolicyObservation

# A report whose source starts with this is a symbolic commitment (paper 4.3: a track
# registered apart from explicit reports), e.g. "commitment:label_memory_pixels".
COMMITMENT_SOURCE = "commitment:"


class EvaluationValidityError(RuntimeError):
    """The evaluation itself failed (transport, server, protocol), not the
    tested system's choice: the episode is invalid, not a policy failure."""


@dataclass(frozen=True)
class EvaluatorView:
    """Evaluator state a privileged system may read: the resolved instance
    and measured object positions with their support."""
    instance: object  # the task family's resolved instance
    positions: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    on_pan: frozenset[str] = frozenset()
    t: float = 0.0
    facts: dict = field(default_factory=dict)  # the family's own evaluator facts (centrifuge: seated slots)


class AcceptsSupports:
    """Mixed into a reference system that takes Oracle supports at the sites it declares
    (``INTERFACES``: site -> modes); each payload delivered holds in ``supplied[site]``
    (set up by the system's reset) until the next delivery at that site."""

    INTERFACES: dict[str, tuple[str, ...]] = {}

    def interfaces(self) -> dict:
        return dict(self.INTERFACES)

    def supply(self, site: str, mode: str, payload: dict) -> None:
        """Deliver one support; it holds until the next delivery at that site."""
        if mode not in self.INTERFACES.get(site, ()):
            raise ValueError(f"{self.name} does not accept {mode}:{site}")
        self.supplied[site] = {"mode": mode, **payload}


class TestedSystem:
    name: str = ""
    privileged: bool = False
    # Parameters the system reads when given but sets no default for (launch
    # validation accepts them besides the defaulted ones in self.params).
    optional_params: tuple[str, ...] = ()
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

    # Optional hooks the graph calls; the defaults are what a plain action-only
    # system means. Override what the system supports.
    def interfaces(self) -> dict | None:
        """Oracle sites and modes this system exposes ({site: (modes...)});
        None: action-only, no support can be delivered to it."""
        return None

    def set_output_dir(self, path) -> None:
        """Episode start: where the system may write its own records."""

    def drain_reports(self) -> list[dict]:
        """Explicit operation reports made since the last call (separately scored track):
        {"operation": {...}, "source": ...}; a source starting with COMMITMENT_SOURCE makes
        it a symbolic commitment, scored on a track of its own."""
        return []

    def stop_dispatch(self, reason: str) -> None:
        """The episode is ending: start no new remote request."""

    def end_episode(self, reason: str = "stopped") -> dict | None:
        """The system's own episode summary for run.json (e.g. model usage); None: nothing to add."""
        return None

    def profile(self) -> dict:
        """The policy profile recorded in run.json."""
        return {"name": self.name, "privileged": self.privileged,
                "action_spec": self.spec.to_dict(), "action_spec_hash": self.spec.content_hash,
                "params": {k: v for k, v in sorted(self.params.items())},
                "implementation": f"{type(self).__module__}.{type(self).__qualname__}"}


