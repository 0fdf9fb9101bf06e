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
    return summarize([attempt_split(a) for a in attempts])
