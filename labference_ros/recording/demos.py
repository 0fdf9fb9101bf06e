"""HDF5 demonstrations from episode bags and run records (paper 8.4).

demonstrations.hdf5
  attrs: format, version, pairing (step k = observation[k], action[k], observation[k+1])
  episodes/<episode_id>/           what a learner may train on
    attrs: episode boundaries (start_t, end_t), frame_rate_hz (= control frequency of
           the steps), policy_control_hz, action_units, cameras, run/instance/system ids, notes
    observation/t [K], observation/joint_positions [K,J], observation/images/<cam> [K,H,W,3],
    observation/image_stamps/<cam> [K]   (camera timestamps of the frames used; a step whose
                                          frame the bag lacks keeps the last earlier image,
                                          and the attrs' notes say where)
    action/t [K-1], action/arm_joint_positions [K-1,7], action/gripper_width [K-1],
    action/gripper_grasp [K-1], control_mask [K-1] (0 = environment in control)
  diagnostics/<episode_id>/        evaluator-only: never a training input
    attrs: instance, hidden goal set and sample mass, contract, outcome, audit verdict
    scores_json, events_jsonl
collection_manifest.json: every attempt (failed and recovered ones too) with its outcome.
training_index.json: the acceptance rule, the split rule and each accepted episode's split.
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import time

import h5py
import numpy as np

from .audit import audit_episode, find_episode_bags
from .bag_reader import BagError, EpisodeBagReader
from .demo_steps import ACTION_UNITS, read_steps

FORMAT, VERSION = "labference-demonstrations", 1
PAIRING = "step k pairs observation[k] (pre-action) with action[k] and observation[k+1]"
ACCEPTANCE_RULE = ("scores.json status == 'final' and valid_complete is true (clean or recovered completion) "
                   "and the replay audit agrees with the online records")
SPLIT_RULE = "val if int(sha256(episode_id)[:8], 16) % 1000 < val_fraction * 1000 else train"


def outcome_of(scores: dict | None) -> str:
    if scores is None:
        return "no_scores"
    if scores.get("status") != "final":
        return f"stopped:{scores.get('status')}"
    if scores.get("valid_complete"):
        return "recovered" if scores.get("recovered_complete") else "success"
    return "failed"


def split_of(episode_id: str, val_fraction: float) -> str:
    h = int(hashlib.sha256(episode_id.encode()).hexdigest()[:8], 16) % 1000
    return "val" if h < val_fraction * 1000 else "train"


def convert_run(run_dir: pathlib.Path, out_dir: pathlib.Path | None = None, val_fraction: float = 0.1) -> dict:
    out_dir = out_dir or run_dir / "demos"
    out_dir.mkdir(parents=True, exist_ok=True)
    h5_path = out_dir / "demonstrations.hdf5"
    tmp = h5_path.with_name(f".{h5_path.name}.tmp")
    attempts = []
    with h5py.File(tmp, "w") as h5:
        h5.attrs.update({"format": FORMAT, "version": VERSION, "pairing": PAIRING, "source_run": str(run_dir)})
        for bag in find_episode_bags(run_dir):
            attempts.append(_convert_episode(h5, bag))
    tmp.replace(h5_path)

    accepted = [a for a in attempts if a["accepted"]]
    manifest = {"format": FORMAT, "version": VERSION, "run_dir": str(run_dir), "hdf5": h5_path.name,
                "created_unix": time.time(), "attempts": attempts}
    index = {"format": FORMAT, "version": VERSION, "hdf5": h5_path.name, "acceptance_rule": ACCEPTANCE_RULE,
             "split_rule": SPLIT_RULE, "val_fraction": val_fraction,
             "episodes": [{"episode_id": a["episode_id"], "group": a["group"], "steps": a["steps"],
                           "split": split_of(a["episode_id"], val_fraction)} for a in accepted],
             "rejected": [{"episode_id": a["episode_id"], "reason": a["reject_reason"]}
                          for a in attempts if not a["accepted"]]}
    for name, data in (("collection_manifest.json", manifest), ("training_index.json", index)):
        (out_dir / name).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return {"hdf5": h5_path, "manifest": out_dir / "collection_manifest.json", "index": out_dir / "training_index.json",
            "episodes": len(attempts), "accepted": len(accepted),
            "failed": sum(1 for a in attempts if a["outcome"] != "success"), "attempts": attempts}


def _read_json(path: pathlib.Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def _convert_episode(h5: h5py.File, bag: pathlib.Path) -> dict:
    records = bag.parent
    run = _read_json(records / "run.json") or {}
    scores = _read_json(records / "scores.json")
    attempt = {"episode_id": run.get("episode_id") or records.name, "bag": str(bag), "records": str(records),
               "outcome": outcome_of(scores), "accepted": False, "reject_reason": "", "group": "", "steps": 0,
               "completion_class": (scores or {}).get("completion_class"),
               "first_choice_correct": (scores or {}).get("first_choice_correct"),
               "executed": (scores or {}).get("executed")}
    try:
        reader = EpisodeBagReader(bag)
        episode_id = reader.custom.get("episode_id") or attempt["episode_id"]
        attempt["episode_id"] = episode_id
        end_t = (scores or {}).get("t")
        steps = read_steps(reader, end_t, run.get("environment_intervals") or ())
    except (BagError, ValueError) as exc:
        attempt["reject_reason"] = f"unreadable: {exc}"
        return attempt
    verdict = audit_episode(bag)
    attempt["audit"] = verdict.verdict
    group = f"episodes/{episode_id}"
    _write_steps(h5.create_group(group), steps, reader.custom, episode_id)
    _write_diagnostics(h5.create_group(f"diagnostics/{episode_id}"), run, scores, records, verdict.verdict)
    attempt.update(group=group, steps=int(len(steps.times) - 1), notes=steps.notes)
    if attempt["outcome"] not in ("success", "recovered"):
        attempt["reject_reason"] = f"outcome {attempt['outcome']}"
    elif verdict.code != 0:
        attempt["reject_reason"] = f"replay audit: {verdict.verdict}"
    else:
        attempt["accepted"] = True
    return attempt


def _write_steps(g: h5py.Group, s, custom: dict, episode_id: str) -> None:
    g.attrs.update({
        "episode_id": episode_id, "run_id": custom.get("run_id", ""), "instance_id": custom.get("instance_id", ""),
        "system": custom.get("system", ""), "seeds": custom.get("seeds", "{}"),
        "start_t": float(s.times[0]), "end_t": float(s.times[-1]),
        "frame_rate_hz": s.frame_rate_hz, "control_frequency_hz": s.frame_rate_hz,
        "policy_control_hz": s.policy_control_hz, "action_units": json.dumps(ACTION_UNITS),
        "cameras": json.dumps(sorted(s.images)), "pairing": PAIRING, "notes": json.dumps(s.notes),
        "first_delivery_t": np.nan if s.first_delivery_t is None else s.first_delivery_t})
    obs = g.create_group("observation")
    obs["t"] = s.times
    obs["joint_positions"] = s.joint_positions
    obs["joint_positions"].attrs["joint_names"] = json.dumps(s.joint_names)
    obs["joint_positions"].attrs["units"] = "rad (revolute), m (fingers)"
    for cam, frames in s.images.items():
        obs.create_dataset(f"images/{cam}", data=frames, compression="lzf", chunks=(1, *frames.shape[1:]))
        obs[f"image_stamps/{cam}"] = s.image_stamps[cam]
    act = g.create_group("action")
    act["t"] = s.times[:-1]
    act["arm_joint_positions"] = s.arm_action
    act["gripper_width"] = s.gripper_width
    act["gripper_grasp"] = s.gripper_grasp
    for name, unit in ACTION_UNITS.items():
        act[name].attrs["units"] = unit
    act["gripper_width"].attrs["missing"] = "NaN until the first gripper command"
    g["control_mask"] = s.control_mask
    g["control_mask"].attrs["meaning"] = "1: the tested system commands; 0: environment-controlled interval"


def _write_diagnostics(g: h5py.Group, run: dict, scores: dict | None, records: pathlib.Path, audit: str) -> None:
    inst = run.get("instance") or {}
    task = run.get("task") or {}
    g.attrs.update({"instance_id": inst.get("instance_id", ""), "goal_set": json.dumps(inst.get("goal_set", [])),
                    "sample_mass_g": float(inst.get("sample_mass_g", np.nan)),
                    "target_g": float(inst.get("target_g", np.nan)),
                    "contract_id": task.get("contract_id", ""), "contract_hash": task.get("contract_hash", ""),
                    "outcome": outcome_of(scores), "audit": audit,
                    "note": "evaluator-only identities and scores; not a policy input"})
    g["scores_json"] = json.dumps(scores or {}, sort_keys=True)
    events = records / "events.jsonl"
    g["events_jsonl"] = events.read_text(encoding="utf-8") if events.exists() else ""
