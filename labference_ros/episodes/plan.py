"""What a run evaluates, fixed before the first episode starts."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from labference_ros import __version__
from labference_ros.core.observation import OBSERVATION_HISTORY_STEPS
from labference_ros.oracle.handoff import FULL_ROLLOUT
from labference_ros.oracle.supports import intervention_identity, parse_launch_support
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks.base import launch_seeds
from labference_ros.tasks import family as task_family


class PlanError(ValueError):
    pass


@dataclass(frozen=True)
class RunSettings:
    episodes: int
    system: str
    condition: str
    seed: int
    output_dir: str
    instances: str  # path of an instance list, or "" to generate
    deadline_s: float
    step_mode: str
    camera_rate: float
    support: str = "none"  # Oracle support condition for full-rollout runs (launch argument)
    task: str = DEFAULT_FAMILY  # the task family (fixed by the graph description)
    image_width: int = 320  # every camera's image size (the observation condition)
    image_height: int = 240


def resolve_run_dir(output_dir: str, now: float | None = None) -> Path:
    """``{timestamp}`` in the argument becomes the start time; an existing run is never overwritten."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    path = Path(output_dir.replace("{timestamp}", stamp))
    if (path / "attempts.jsonl").exists() or (path / "summary.json").exists():
        raise PlanError(f"{path} already holds a run; choose another output_dir")
    return path


def plan_instances(settings: RunSettings) -> list:
    family = task_family(settings.task)
    if settings.instances:
        try:
            items = family.read_instances(settings.instances)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PlanError(f"cannot read instance list {settings.instances}: {exc}") from exc
        if not items:
            raise PlanError(f"instance list {settings.instances} is empty")
        return items
    if settings.episodes < 1:
        raise PlanError(f"episodes must be at least 1, got {settings.episodes}")
    return family.generate(settings.condition, settings.episodes, **launch_seeds(settings.seed))


def population_certification(path: str) -> dict | None:
    """The certification summary of the population an instance list was fixed from
    (core.certificates): its own, or the one a campaign chunk carries; None without."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8")) if path else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return (data.get("certification") or {}).get("summary") or (data.get("meta") or {}).get("population_certification")


def write_plan(run_dir: Path, settings: RunSettings, instances: list) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "instances.json"
    meta = {"source": settings.instances or "generated", "system": settings.system, "seed": settings.seed}
    certification = population_certification(settings.instances)
    if certification:  # the report states how many instances the population lost at certification
        meta["population_certification"] = certification
    task_family(settings.task).write_instances(path, instances, meta=meta)
    return path


def episode_id(index: int, instance) -> str:
    return f"{index:04d}_{instance.instance_id}"


# What the policy bridge delivers (nodes/policy_bridge.py): each observation once, at its
# handoff, with the system's own last steps; anything older lives in the system's own state.
def history_protocol(family) -> str:
    """run.json's history protocol for a family's episodes (TaskFamily.history_protocol)."""
    return f"{family.history_protocol}+last_{OBSERVATION_HISTORY_STEPS}_steps"


def observation_condition(settings: RunSettings) -> str:
    """The observation condition's name, e.g. 'rgb:front+wrist+display@320x240/10Hz'
    (RGB and RGB-D are distinct conditions, as are image sizes and camera rates)."""
    cameras = "+".join(task_family(settings.task).cameras)
    return f"rgb:{cameras}@{settings.image_width}x{settings.image_height}/{settings.camera_rate:g}Hz"


def run_json(settings: RunSettings, instance, assets: dict | None = None) -> str:
    """Resolved settings for the episode's run.json. The referee passes these keys to
    core.records.run_info, so only its sections may appear (the run directory and
    episode index are in the runner's attempt.json). ``assets``: the task family's
    (TaskFamily.assets), computed once per run."""
    family = task_family(settings.task)
    observation = {"camera_rate_hz": settings.camera_rate, "step_mode": settings.step_mode,
                   "image_width": settings.image_width, "image_height": settings.image_height,
                   "cameras": list(family.cameras), "condition": observation_condition(settings),
                   "history_protocol": history_protocol(family)}
    environment = family.environment_profile(instance.condition)
    if environment:  # what the scene does on its own (an occluder, a hidden-event condition's lamp)
        observation["environment"] = environment
    return json.dumps({
        "policy": {"system": settings.system, "seed": instance.policy_seed},
        "observation": observation,
        "budgets": {"deadline_sim_s": settings.deadline_s},
        "intervention": intervention_identity(parse_launch_support(settings.support), FULL_ROLLOUT),
        "assets": assets or {},
        "versions": {"labference_ros": __version__},
    }, sort_keys=True)
