"""Runtime of an attempt split into inference, motion and waiting (wall seconds).

What the records carry:
  wall        the runner's wall time of the attempt (summary.json per_episode `wall_s`);
  inference   policy_actions.jsonl `chunk` records: `inference_wall_s`, the bridge's
              wall time of each call into the tested system, summed;
  motion      only a system that times its own physical execution reports it: the
              `system_summary` record's `usage.physical_execution_wall_s` (the agent;
              the policy bridge records {"record": "system_summary", **episode_summary()});
  waiting     the rest, wall - inference - motion (referee echoes, simulator
              advances outside commanded motion, stop hold), once all three are known.
A part the records do not carry is None ("unavailable"), never 0 or a guess.
"""
from __future__ import annotations

from pathlib import Path

from labference_ros.core.metrics import duration_stats
from labference_ros.core.records import read_jsonl

from . import accounting as acc

PARTS = ("inference", "motion", "waiting")
POLICY_LOG = "policy_actions.jsonl"
UNAVAILABLE_WHY = {
    "wall": "the runner recorded no wall time for these attempts",
    "inference": f"no {POLICY_LOG} chunk records (the policy bridge's inference timing)",
    "motion": "the tested system does not record its motion time "
              "(only systems that time their own execution, e.g. the agent, do)",
    "waiting": "needs wall, inference and motion time of the same attempt",
}


def _motion(summary: dict) -> float | None:
    """The system's own physical execution time from its summary: under `usage`
    (EpisodeAccount.usage()); records written before that kept it at the top level."""
    usage = summary.get("usage")
    if isinstance(usage, dict) and usage.get("physical_execution_wall_s") is not None:
        return usage["physical_execution_wall_s"]
    return summary.get("physical_execution_wall_s")


def split(wall_s: float | None, policy_records: list[dict] | None) -> dict:
    """One attempt's split from its wall time and its policy_actions.jsonl records."""
    chunks = [r for r in policy_records or [] if r.get("record") == "chunk"]
    inference = (sum(float(r["inference_wall_s"]) for r in chunks)
                 if chunks and all(r.get("inference_wall_s") is not None for r in chunks) else None)
    summaries = [r for r in policy_records or [] if r.get("record") == "system_summary"]
    motion = _motion(summaries[-1]) if summaries else None
    waiting = None if None in (wall_s, inference, motion) else wall_s - inference - motion
    return {"wall": wall_s, "inference": inference, "motion": motion, "waiting": waiting}


def read_policy_records(episode_dir) -> list[dict] | None:
    """The episode's policy_actions.jsonl lines; None when the file is absent or
    unreadable. A torn last line (a killed bridge) is skipped."""
    if not episode_dir:
        return None
    try:
        return read_jsonl(Path(episode_dir) / POLICY_LOG, tolerate_torn_tail=True)
    except (OSError, ValueError):  # ValueError: a bad line before the last one
        return None


def attempt_split(ep: dict) -> dict:
    return split(acc.wall_s(ep), read_policy_records(ep.get("path")))


def summarize(splits: list[dict]) -> dict:
    """Per cell: mean seconds per attempt of each part over the attempts that record it,
    with how many do; a part no attempt records is unavailable, with the reason."""
    out = {"attempts": len(splits)}
    for part in ("wall",) + PARTS:
        known = [s[part] for s in splits if s[part] is not None]
        out[part] = {"mean_s": sum(known) / len(known) if known else None, "n": len(known),
                     "unavailable": None if known else UNAVAILABLE_WHY[part]}
    # Wall time not attributed to a recorded part, over attempts with wall and inference
    # known: what motion and waiting share when the system does not time its motion.
    both = [s["wall"] - s["inference"] for s in splits if s["wall"] is not None and s["inference"] is not None]
    out["not_inference"] = {"mean_s": sum(both) / len(both) if both else None, "n": len(both)}
    return out


def runtime(attempts) -> dict:
    attempts = list(attempts)
    out = summarize([attempt_split(a) for a in attempts])
    out["policy_requests"] = request_latency([read_policy_records(a.get("path")) for a in attempts])
    return out


# -- a remote policy's request latency ------------------------------------------------
def request_latency(per_attempt_records: list[list[dict] | None]) -> dict:
    """Per cell: the remote policy's requests (chunk records' `latency`, policies/latency.py):
    the round trip the evaluator measured, and each numeric key of the server's own timing,
    pooled over every request of every attempt. `requests` 0: no remote policy timed here."""
    round_trips = []
    server: dict[str, list[float]] = {}
    for records in per_attempt_records:
        for r in records or []:
            timing = r.get("latency") if r.get("record") == "chunk" else None
            if not isinstance(timing, dict) or timing.get("round_trip_s") is None:
                continue
            round_trips.append(float(timing["round_trip_s"]))
            for key, value in (timing.get("server_timing") or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    server.setdefault(key, []).append(float(value))
    return {"requests": len(round_trips), "round_trip_s": duration_stats(round_trips),
            "server_timing": {k: duration_stats(v) for k, v in sorted(server.items())}}


# -- response latency on the wall clock ---------------------------------------------
def sim_wall_pairs(policy_records: list[dict] | None) -> list[tuple[float, float]]:
    """(sim time, wall time) of every receipt and chunk the loop stamped, in wall order.
    A receipt is stamped when the observation went out; a chunk when the system's
    answer came back (sim time has not moved in between: it waits for inference)."""
    pairs = []
    for r in policy_records or []:
        wall = r.get("wall_time")
        sim = r.get("sim_time") if r.get("record") == "receipt" else r.get("t") if r.get("record") == "chunk" else None
        if wall is not None and sim is not None:
            pairs.append((float(sim), float(wall)))
    return sorted(pairs, key=lambda p: p[1])


def wall_at(pairs: list[tuple[float, float]], t: float) -> float | None:
    """Wall time at which the simulation passed sim time t: linear between the
    last stamp at or before t and the next one after it; None outside them."""
    before = [p for p in pairs if p[0] <= t + 1e-9]
    after = [p for p in pairs if p[0] > t + 1e-9]
    if not before or not after:
        return None
    (t0, w0), (t1, w1) = before[-1], after[0]
    return w0 + (t - t0) / (t1 - t0) * (w1 - w0)


def wall_latencies(ep: dict, decisions: list[dict]) -> list[float | None]:
    """Per decision: wall seconds from its delivery (the receipt's stamp) to its
    first identified choice; None where a stamp is missing (older records, a
    choice after the last stamp)."""
    records = read_policy_records(ep.get("path"))
    pairs = sim_wall_pairs(records)
    delivered = {r.get("observation_id"): r.get("wall_time") for r in records or []
                 if r.get("record") == "receipt"}
    out = []
    for d in decisions:
        start = delivered.get(d.get("delivered_observation_id"))
        end = wall_at(pairs, float(d["first_choice_t"])) if d.get("first_choice_t") is not None else None
        out.append(None if start is None or end is None or d.get("first_choice") is None else end - start)
    return out

