"""Campaign locks: freeze everything a campaign's results depend on.

`lock(spec)` writes an immutable JSON lock holding the task pack (every arm's
instance list, embedded, plus the source file hash), contract hashes, the code
state (git tree of HEAD, dirty flag, content hash of the code paths),
dependency versions, seeds and machine information. `verify(lock)` recomputes
every hashed input and returns what differs; a campaign with any difference
does not run (protocol: do not modify a frozen campaign; make a new version).

Spec (YAML):
    name: pilot-01
    output_dir: runs/pilot-01        # relative to the spec file
    launch_file: weighing_sim.launch.py  # optional (default: the default family's graph)
    chunk_size: 10                   # episodes per launcher call
    seeds: {launch: 0}
    code_root: .                     # optional (default: this checkout)
    code_paths: [labference_ros]     # optional
    dependencies: [numpy, mujoco]    # optional (default: DEFAULT_DEPENDENCIES)
    arms:
      - system: scripted
        condition: basic
        args: {observation: full}    # extra launcher arguments key:=value
        instances: lists/basic.json  # a write_instance_list file, or
        # generate: {n: 20, task_seed: 1, layout_seed: 2, policy_seed: 3, pairs: false}
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import yaml

from labference_ros.core.certificates import certificates_of, refusal, summary
from labference_ros.graphs import graph_for
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family

from .sequential import design_of_spec


def family_of_launch_file(launch_file: str):
    """The task family whose graph a launch file starts."""
    return task_family(graph_for(launch_file).task)


def default_launch_file() -> str:
    """A spec or lock without `launch_file`: the default family's (first) graph."""
    import importlib

    return importlib.import_module(task_family(DEFAULT_FAMILY).graphs[0]).GRAPH.launch_file


LOCK_SCHEMA = 1
DEFAULT_DEPENDENCIES = ("labference-ros", "numpy", "scipy", "mujoco", "click", "PyYAML", "msgpack")
DEFAULT_CODE_PATHS = ("labference_ros", "setup.py", "msg", "srv", "urdf")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class LockMismatch(RuntimeError):
    def __init__(self, differences: dict):
        self.differences = differences  # what -> (locked, now)
        lines = "; ".join(f"{k}: locked {v[0]!r}, now {v[1]!r}" for k, v in sorted(differences.items()))
        super().__init__(f"campaign lock does not match: {lines}")


def sha256_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def canonical_sha256(data) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# -- code, dependencies, machine -----------------------------------------------------
def _git(root: Path, *args) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def code_state(root: Path, paths=DEFAULT_CODE_PATHS) -> dict:
    """HEAD's git tree, whether the code paths differ from it, and a content hash of
    every file under them (tracked or not), so an edit after locking is caught."""
    root = Path(root).resolve()
    h = hashlib.sha256()
    for rel in sorted(paths):
        base = root / rel
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for f in files:
            if "__pycache__" in f.parts or f.suffix in (".pyc", ".pyo"):
                continue
            h.update(str(f.relative_to(root)).encode() + b"\0")
            h.update(hashlib.sha256(f.read_bytes()).digest())
    status = _git(root, "status", "--porcelain", "--", *paths)
    return {"root": str(root), "paths": sorted(paths), "head_tree": _git(root, "rev-parse", "HEAD^{tree}"),
            "dirty": None if status is None else bool(status), "content_sha256": h.hexdigest()}


def dependency_versions(names=DEFAULT_DEPENDENCIES) -> dict:
    out = {}
    for n in sorted(names):
        try:
            out[n] = md.version(n)
        except md.PackageNotFoundError:
            out[n] = None
    return out


def machine_info() -> dict:
    return {"platform": platform.platform(), "python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor(), "cpu_count": os.cpu_count(), "node": platform.node()}


# -- task pack -------------------------------------------------------------------------
def _instances_of(family, arm: dict, base: Path, certify_dir: Path) -> tuple[list[dict], dict, dict, dict]:
    """The arm's instances as JSON dicts, their source, their certificates (those its list
    file carries, or, for instances generated here, made here: campaign.certify) and the
    certification summary of the population they were fixed from."""
    if arm.get("instances"):
        path = (base / arm["instances"]).resolve()
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data["instances"] if isinstance(data, dict) else data
        certs = certificates_of(data)
        population = ((data.get("certification") or {}).get("summary") if isinstance(data, dict) else None) \
            or summary(certs, [i.get("instance_id") for i in items])
        return items, {"path": str(path), "sha256": sha256_file(path)}, certs, population
    gen = dict(arm.get("generate") or {})
    if not gen:
        raise ValueError(f"arm {arm.get('system')}/{arm.get('condition')} has neither instances nor generate")
    seeds = {k: int(gen.get(k, 0)) for k in ("task_seed", "layout_seed", "policy_seed")}
    if gen.get("pairs"):
        made = [i for pair in family.generate_pairs(arm["condition"], int(gen["n"]), **seeds) for i in pair]
    else:
        made = family.generate(arm["condition"], int(gen["n"]), **seeds)
    from .certify import certify_instances  # runs the simulator: only for instances generated here

    certs = certify_instances(family, made, certify_dir, f"{certify_dir}/")
    return ([json.loads(i.to_json()) for i in made], {"generate": gen, "generator": family.generator_version},
            certs, summary(certs, [i.instance_id for i in made]))


def check_certified(arm_name: str, items: list[dict], certificates: dict) -> dict:
    """The arm's certificates, one per instance; ValueError (one line) naming the first
    instance that is uncertified, rejected or changed since, and how many others are."""
    refused = [r for r in (refusal(i, certificates.get(i.get("instance_id"))) for i in items) if r]
    if refused:
        more = f" ({len(refused) - 1} more instance(s) refused)" if len(refused) > 1 else ""
        raise ValueError(f"arm {arm_name}: {refused[0]}{more}; an uncertified instance never enters a lock")
    return {i["instance_id"]: certificates[i["instance_id"]] for i in items}


CAMPAIGN_ARGS = ("episodes", "system", "condition", "seed", "output_dir", "instances")


def check_arm_args(arm: dict, launch_file: str) -> None:
    """Refuse at lock time what the launcher would refuse after the campaign started."""
    args = set(arm.get("args") or {})
    owned = args & set(CAMPAIGN_ARGS)
    if owned:
        raise ValueError(f"arm args {sorted(owned)} are set by the campaign itself")
    unknown = args - {a.name for a in graph_for(launch_file).arguments}
    if unknown:
        raise ValueError(f"arm args {sorted(unknown)} are not arguments of {launch_file}")


def arm_id(arm: dict, index: int) -> str:
    return str(arm.get("id") or f"{index:02d}-{arm['system']}-{arm['condition']}")


def read_spec(path: Path) -> dict:
    from labference_ros.campaign.spec_schema import validate_spec

    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"campaign spec {path} is not valid YAML: {exc}") from None
    if isinstance(spec, dict) and not spec.get("arms"):
        raise ValueError("campaign spec has no arms")
    validate_spec(spec)
    return spec


def check_runnable(spec: dict, launch_file: str) -> None:
    """A lock that names a launch file or tested system this checkout lacks could never run."""
    from labference_ros.graphs import graph_for
    from labference_ros.policies import available

    try:
        graph_for(launch_file)
    except KeyError as exc:
        raise ValueError(f"campaign spec launch_file: {exc.args[0]}") from None
    known = available()
    for k, arm in enumerate(spec["arms"]):
        if arm["system"] not in known:
            raise ValueError(f"arm {arm_id(arm, k)}: unknown tested system {arm['system']!r}; "
                             f"registered: {', '.join(known)}")


def build_lock(spec_path: Path) -> dict:
    spec_path = Path(spec_path).resolve()
    spec, base = read_spec(spec_path), spec_path.parent
    arms, contracts = [], {}
    launch_file = spec.get("launch_file") or default_launch_file()
    check_runnable(spec, launch_file)
    family = family_of_launch_file(launch_file)
    for k, arm in enumerate(spec["arms"]):
        check_arm_args(arm, launch_file)
        items, source, certificates, population = _instances_of(family, arm, base,
                                                    base / f"{spec_path.stem}.certification" / arm_id(arm, k))
        ids = [i["instance_id"] for i in items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"arm {arm_id(arm, k)}: duplicated instance ids in the locked list")
        certificates = check_certified(arm_id(arm, k), items, certificates)
        contracts[arm["condition"]] = family.contract_for(arm["condition"]).content_hash
        arms.append({"arm_id": arm_id(arm, k), "system": arm["system"], "condition": arm["condition"],
                     "args": dict(arm.get("args") or {}), "instances_source": source,
                     "instances_sha256": canonical_sha256(items), "instances": items,
                     "certificates": certificates, "population_certification": population})
    design = design_of_spec(spec, arms)  # fixed, or the pre-registered sequential test
    code_root = (base / spec["code_root"]).resolve() if spec.get("code_root") else PACKAGE_ROOT
    body = {
        "lock_schema": LOCK_SCHEMA, "name": spec.get("name", spec_path.stem),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spec_path": str(spec_path), "spec_sha256": sha256_file(spec_path), "spec": spec,
        "output_dir": str((base / spec.get("output_dir", spec_path.stem + "-runs")).resolve()),
        "launch_file": launch_file,
        "chunk_size": int(spec.get("chunk_size", 10)),
        "seeds": {"launch": 0, **(spec.get("seeds") or {}), "bootstrap": 240926},
        "contracts": contracts, "arms": arms, "design": design,
        "code": code_state(code_root, spec.get("code_paths") or DEFAULT_CODE_PATHS),
        "dependencies": dependency_versions(spec.get("dependencies") or DEFAULT_DEPENDENCIES),
        "machine": machine_info(),
    }
    return {**body, "lock_sha256": canonical_sha256(body)}


def write_lock(lock: dict, path: Path) -> Path:
    """Write once, read-only: a lock is never edited; a changed campaign gets a new lock."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; a lock is immutable (write a new one)")
    path.write_text(json.dumps(lock, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    os.chmod(path, 0o444)
    return path


def read_lock(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def verify(lock: dict) -> dict:
    """Recompute every hashed input; returns {what: (locked, now)} for each difference."""
    diff = {}
    body = {k: v for k, v in lock.items() if k != "lock_sha256"}
    if canonical_sha256(body) != lock.get("lock_sha256"):
        diff["lock_sha256"] = (lock.get("lock_sha256"), canonical_sha256(body))
    now = sha256_file(Path(lock["spec_path"]))
    if now != lock["spec_sha256"]:
        diff["spec"] = (lock["spec_sha256"], now)
    for arm in lock["arms"]:
        if canonical_sha256(arm["instances"]) != arm["instances_sha256"]:
            diff[f"instances:{arm['arm_id']}"] = (arm["instances_sha256"], canonical_sha256(arm["instances"]))
        src = arm["instances_source"]
        if "path" in src:
            now = sha256_file(Path(src["path"]))
            if now != src["sha256"]:
                diff[f"instance_list:{src['path']}"] = (src["sha256"], now)
    family = family_of_launch_file(lock.get("launch_file") or default_launch_file())
    for cond, h in lock["contracts"].items():
        now = family.contract_for(cond).content_hash
        if now != h:
            diff[f"contract:{cond}"] = (h, now)
    code = lock["code"]
    now_code = code_state(Path(code["root"]), code["paths"])
    for k in ("head_tree", "dirty", "content_sha256"):
        if now_code[k] != code[k]:
            diff[f"code.{k}"] = (code[k], now_code[k])
    now_deps = dependency_versions(lock["dependencies"].keys())
    for name, v in lock["dependencies"].items():
        if now_deps[name] != v:
            diff[f"dependency:{name}"] = (v, now_deps[name])
    return diff
