"""Are a run's record files whole and consistent? Offline tools ask before they count.

`report` and `diagnose` would otherwise read an unparseable scores.json as "no
scores" and turn a scored episode into a validity error. check_inputs lists
every record file that does not parse (JSON, or a JSONL line, a torn last line
included) and every disagreement between files (a summary row that says an
episode was scored whose scores.json is missing; run.json and scores.json of
different episodes), each with its path. An input without any run records is
an error of its own (NoRuns).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .episodes import output_dirs

RUN_JSON_FILES = ("summary.json", "instances.json", "attempt.json")
RUN_JSONL_FILES = ("attempts.jsonl",)
EPISODE_JSON_FILES = ("run.json", "scores.json", "attempt.json")
EPISODE_JSONL_FILES = ("events.jsonl", "observations.jsonl", "online_scores.jsonl", "policy_actions.jsonl")


class NoRuns(ValueError):
    pass


@dataclass(frozen=True)
class Problem:
    path: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


def _json(path: Path, problems: list[Problem]):
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(str(path), f"unreadable ({exc})"))
        return None
    except ValueError as exc:
        problems.append(Problem(str(path), f"not valid JSON ({exc})"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem(str(path), f"not a JSON object (a {type(data).__name__})"))
        return None
    return data


def _jsonl(path: Path, problems: list[Problem]) -> None:
    if not path.exists():
        return
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        problems.append(Problem(str(path), f"unreadable ({exc})"))
        return
    if data and not data.endswith(b"\n"):
        problems.append(Problem(str(path), "ends in a partial line (its writer stopped mid-line)"))
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            problems.append(Problem(str(path), f"line {number} is not valid JSON"))
            return  # one per file: the rest of it is suspect anyway


def check_output_dir(out_dir: Path) -> list[Problem]:
    problems: list[Problem] = []
    parsed = {name: _json(out_dir / name, problems) for name in RUN_JSON_FILES}
    for name in RUN_JSONL_FILES:
        _jsonl(out_dir / name, problems)
    rows = (parsed["summary.json"] or {}).get("per_episode") or []
    scored = {r.get("episode_id") for r in rows if isinstance(r, dict) and r.get("status") == "ok"}
    ep_root = out_dir / "episodes"
    for d in sorted(p for p in ep_root.iterdir() if p.is_dir()) if ep_root.is_dir() else []:
        files = {name: _json(d / name, problems) for name in EPISODE_JSON_FILES}
        for name in EPISODE_JSONL_FILES:
            _jsonl(d / name, problems)
        run, scores = files["run.json"], files["scores.json"]
        if d.name in scored and scores is None and not any(p.path == str(d / "scores.json") for p in problems):
            problems.append(Problem(str(d / "scores.json"),
                                    f"missing, but {out_dir / 'summary.json'} says episode {d.name} was scored"))
        if run and scores and run.get("episode_id") and scores.get("episode_id") \
                and run["episode_id"] != scores["episode_id"]:
            problems.append(Problem(str(d / "scores.json"), f"is episode {scores['episode_id']!r} but run.json "
                                                            f"is episode {run['episode_id']!r}"))
    return problems


def check_inputs(roots) -> list[Problem]:
    """Every problem under the given run directories; NoRuns when none holds run records."""
    problems: list[Problem] = []
    for root in roots:
        dirs = output_dirs(Path(root))
        if not dirs:
            raise NoRuns(f"{root}: no run records (no episodes/ directory or attempt.json under it)")
        for out_dir in dirs:
            problems += check_output_dir(out_dir)
    return problems
