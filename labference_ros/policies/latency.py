"""Per-request latency of a remote policy: the round trip the evaluator
measured and the server's own timing where it reports one (OpenPI's
`server_timing`, GR00T's `info`). The last request's entry goes into its
chunk record; the episode's summary (count, mean, median, p95, max) goes
into run.json's system summary (paper: runtime per episode)."""
from __future__ import annotations

from labference_ros.core.metrics import duration_stats


class LatencyLog:
    def __init__(self):
        self.round_trips: list[float] = []
        self.server: list[dict] = []
        self.last: dict | None = None

    def add(self, round_trip_s: float, server_timing) -> None:
        self.round_trips.append(float(round_trip_s))
        entry = {"round_trip_s": float(round_trip_s)}
        if server_timing is not None:
            entry["server_timing"] = server_timing
            if isinstance(server_timing, dict):
                self.server.append(server_timing)
        self.last = entry

    def summary(self) -> dict:
        out = {"requests": len(self.round_trips), "round_trip_s": duration_stats(self.round_trips)}
        keys = sorted({k for t in self.server for k, v in t.items() if _number(v)})
        if keys:
            out["server_timing"] = {k: duration_stats([float(t[k]) for t in self.server if _number(t.get(k))])
                                    for k in keys}
        return out


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)

