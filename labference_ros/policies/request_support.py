"""Oracle support for remote policy servers (`http`, `openpi`): an optional
`support` field in the next request.

A server that can use evaluator support declares which with the system
parameter `accepts_support`, e.g. "assist:state,assist:decision". A server
that declares nothing is action-only, and the launcher refuses any support for
it. Each support the referee accepted goes out once, with the next request:

    "support": [{"site": "state", "mode": "assist", "payload": {"displayed_g": 150.0, "stable": true}}]

Assist adds information: the server still produces its own actions, which are
executed and scored. Replace at a site means the server has declared that it
puts the payload in place of its own estimate (state) or decision; the
evaluator cannot see inside a remote server, so that is the server's contract.
Geometry (Assist only) carries the candidate frames. Skill and geometry
Replace need a hook at the system's own output, which a remote server does not
expose."""
from __future__ import annotations

import threading

SITE_MODES = {"state": ("assist", "replace"), "decision": ("assist", "replace"), "geometry": ("assist",)}
PARAM = "accepts_support"


def parse_accepts(text: str) -> dict[str, tuple[str, ...]] | None:
    """"assist:state,replace:decision" -> {"state": ("assist",), "decision": ("replace",)};
    "" -> None (action-only). A site or mode a remote server cannot take raises ValueError."""
    out: dict[str, list[str]] = {}
    for item in (s.strip() for s in str(text or "").split(",")):
        if not item:
            continue
        mode, _, site = item.partition(":")
        if site not in SITE_MODES or mode not in SITE_MODES[site]:
            known = ", ".join(f"{m}:{s}" for s, modes in SITE_MODES.items() for m in modes)
            raise ValueError(f"{PARAM}: {item!r} is not a support a remote server can take; known: {known}")
        if mode not in out.setdefault(site, []):
            out[site].append(mode)
    return {site: tuple(modes) for site, modes in out.items()} or None


class RequestSupport:
    """Mixin for a TestedSystem whose requests can carry a `support` field."""

    def _init_support(self) -> None:
        self.params.setdefault(PARAM, "")
        self._accepts = parse_accepts(self.params[PARAM])
        self._support_lock = threading.Lock()
        self._pending_support: dict[str, dict] = {}

    def interfaces(self) -> dict | None:
        return dict(self._accepts) if self._accepts else None

    def supply(self, site: str, mode: str, payload: dict) -> None:
        """A support the referee accepted: it goes out with the next request only;
        a newer one at the same site replaces one not sent yet."""
        if not self._accepts or mode not in self._accepts.get(site, ()):
            raise ValueError(f"{self.name} does not accept {mode}:{site}")
        with self._support_lock:  # the bridge supplies from its thread while act runs in the worker
            self._pending_support.pop(site, None)
            self._pending_support[site] = {"site": site, "mode": mode, "payload": dict(payload)}

    def take_support(self) -> list[dict]:
        """The supports for the request about to go out (each sent once)."""
        with self._support_lock:
            taken, self._pending_support = self._pending_support, {}
        return list(taken.values())

    def reset_support(self) -> None:
        with self._support_lock:
            self._pending_support = {}
