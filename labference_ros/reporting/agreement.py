"""The rehearsal's two referees compared, episode by episode: the sensor-only referee's
scores.json and events.jsonl against the shadow referee's shadow/scores.json and
shadow/events.jsonl (graphs/weighing_rehearsal.py; what is compared: core/agreement.py)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from labference_ros.core.agreement import (REHEARSAL_OPPORTUNITY_FIELDS, differences, event_differences,
                                           uncertainty_notes)
from labference_ros.core.proportions import wilson
from labference_ros.core.records import read_jsonl

SHADOW_DIR = "shadow"  # the shadow referee's records_subdir


@dataclass
class EpisodeAgreement:
    episode: str
    differences: list[str] = field(default_factory=list)
    problem: str = ""  # why the two could not be compared ("" when they were)
    notes: list[str] = field(default_factory=list)  # what is said but not compared (sensing uncertainty)

    @property
    def agrees(self) -> bool:
        return not self.problem and not self.differences


def _scores(path: Path) -> tuple[dict | None, str]:
    if not path.is_file():
        return None, f"no {path.parent.name}/{path.name}" if path.parent.name == SHADOW_DIR else f"no {path.name}"
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, ValueError) as exc:
        return None, f"unreadable {path}: {exc}"


def _events(path: Path) -> tuple[list[dict] | None, str]:
    if not path.is_file():
        return None, f"no {path.parent.name}/{path.name}" if path.parent.name == SHADOW_DIR else f"no {path.name}"
    try:
        return read_jsonl(path), ""
    except (OSError, ValueError) as exc:
        return None, f"unreadable {path}: {exc}"


def compare_run(run_dir: str | Path) -> list[EpisodeAgreement]:
    """Every episode of a rehearsal run, in order. ValueError: not a rehearsal run directory."""
    episodes_dir = Path(run_dir) / "episodes"
    if not episodes_dir.is_dir():
        raise ValueError(f"{run_dir} has no episodes/ folder: not a run directory")
    out = []
    for episode in sorted(p for p in episodes_dir.iterdir() if p.is_dir()):
        sensor, problem = _scores(episode / "scores.json")
        privileged, shadow_problem = _scores(episode / SHADOW_DIR / "scores.json")
        sensor_events, events_problem = _events(episode / "events.jsonl")
        privileged_events, shadow_events_problem = _events(episode / SHADOW_DIR / "events.jsonl")
        problem = problem or shadow_problem or events_problem or shadow_events_problem
        found = [] if problem else (differences(privileged, sensor, REHEARSAL_OPPORTUNITY_FIELDS)
                                    + event_differences(privileged_events, sensor_events, skip_start=True))
        notes = [] if problem else uncertainty_notes(sensor_events)
        out.append(EpisodeAgreement(episode.name, found, problem, notes))
    if out and all(e.problem == f"no {SHADOW_DIR}/scores.json" for e in out):
        raise ValueError(f"{run_dir}: no episode has shadow referee records (run weighing_rehearsal.launch.py)")
    return out


def format_agreement(results: list[EpisodeAgreement]) -> str:
    agreeing = sum(e.agrees for e in results)
    lines = [f"{e.episode}: {'agrees' if e.agrees else 'not compared: ' + e.problem if e.problem else 'differs'}"
             for e in results]
    for e in results:
        lines += [f"  {e.episode}: {d}" for d in e.differences]
    for e in results:
        lines += [f"  {e.episode}: ({n})" for n in e.notes]
    lo, hi = wilson(agreeing, len(results))
    interval = "" if lo is None else f" (95% Wilson interval {100 * lo:.1f}%..{100 * hi:.1f}%)"
    lines.append(f"sensor-only referee agrees with the shadow referee in {agreeing} of {len(results)} episodes"
                 + interval)
    return "\n".join(lines)
