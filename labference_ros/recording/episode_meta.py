"""The identity of an episode as stored in the bag's metadata.yaml custom_data,
so a bag alone says which run, episode, instance, seeds, system and contract it holds."""
from __future__ import annotations

import json
import pathlib

from labference_ros.tasks.base import TaskFamily


def episode_custom_data(family: TaskFamily, episode_id: str, instance_json: str, run_json: str,
                        output_dir: pathlib.Path) -> dict:
    if not episode_id:
        raise ValueError("episode_id is empty")
    instance = family.instance_from_json(instance_json)
    contract = family.contract_for(instance.condition)
    run = json.loads(run_json) if run_json else {}
    policy = run.get("policy") or {}
    return {
        "run_id": str(run.get("run_id") or output_dir.resolve().parent.name),
        "episode_id": episode_id,
        "instance_id": instance.instance_id,
        "seeds": {"task": instance.task_seed, "layout": instance.layout_seed, "policy": instance.policy_seed},
        "system": str(policy.get("system") or policy.get("name") or ""),
        "contract_id": contract.contract_id,
        "contract_hash": contract.content_hash,
        "instance_json": instance_json,
        "run_json": run_json or "{}",
        "time_base": "log time = wall-clock receive time (ns); sim time is in header stamps",
    }
