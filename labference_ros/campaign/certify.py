"""Certification before inclusion (SciHorizon-eLab 3.4, eq. 5), per instance:

    Gamma(instance) = I[compile and execute and predicates and visual]

The family's reference program (TaskFamily.reference_program, its scripted
expert) runs one episode of the instance in one process, through the graph's
episode loop (oracle.continuation.run_in_world: core.episode_loop.EpisodeLoop
with the family's referee fed every delivery and a measurement per hold
interval). The instance is certified only if

  compile     its scene builds and its referee and the program start;
  execute     the episode runs without a fault and every chunk of the program
              passes the action checks (no rejected chunk);
  <steps>     every step of the family's ordered chain holds, in order
              (TaskFamily.certification_steps: the contract's SR/SSR steps);
  choices     every native opportunity got a first choice, in its legal set,
              and that choice was physically confirmed (executed);
  clean_end   the episode ended cleanly: clean completion, no safety or
              validity violation, not stopped by the deadline;
  frames      key frames were rendered (start, each step's first instant, end)
              and are not blank; they are kept as PNG for a person's visual check.

The first check that fails is the certificate's failing step. Certificates
go back into the population file (core.certificates); a campaign lock
refuses an instance without a passing one.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import time
from pathlib import Path

from labference_ros import __version__
from labference_ros.core.certificates import (CERTIFICATE_SCHEMA, CERTIFIED, REJECTED, certificates_of,
                                              instance_sha256, summary)
from labference_ros.tasks import available, family as task_family

DEFAULT_DEADLINE_S = 60.0


class CertificationError(ValueError):
    """A population that cannot be certified at all (unreadable, unknown family)."""


# -- population files --------------------------------------------------------------------
def population_file(pop) -> Path:
    """POP: an instance-list file, or a folder holding instances.json."""
    path = Path(pop)
    if path.is_dir():
        path = path / "instances.json"
    if not path.is_file():
        raise CertificationError(f"{pop}: no population file (an instances.json or an instance list)")
    return path


def read_population(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CertificationError(f"{path}: not a readable population file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("instances"), list):
        raise CertificationError(f"{path}: not a population file (no instances list)")
    return data


def family_of_population(data: dict, task: str = ""):
    """The family that generated a population: named (task), or the one whose
    generator version the file records."""
    if task:
        try:
            return task_family(task)
        except KeyError as exc:
            raise CertificationError(exc.args[0]) from None
    for name in available():
        fam = task_family(name)
        if fam.generator_version and fam.generator_version == data.get("generator"):
            return fam
    raise CertificationError(f"no registered task family made generator {data.get('generator')!r}; "
                             f"name one with task:=NAME")


def deadline_of(family) -> float:
    """Sim seconds of a graph episode of the family (its first graph's deadline_s)."""
    for module in family.graphs:
        try:
            return float(importlib.import_module(module).GRAPH.argument("deadline_s").default)
        except (ImportError, AttributeError, KeyError, ValueError):
            continue
    return DEFAULT_DEADLINE_S


# -- one instance --------------------------------------------------------------------------
class _WatchedReferee:
    """The referee as run_in_world drives it; after every measurement that produced
    records it notes when each step of the chain first held (in order) and keeps a
    key frame there."""

    def __init__(self, referee, chain, keep_frame):
        self._referee = referee
        self._chain = chain
        self._keep_frame = keep_frame
        self.step_times: dict[str, float] = {}

    def __getattr__(self, name):
        return getattr(self._referee, name)

    def step(self, measurement):
        return self._noted(self._referee.step(measurement), float(measurement.t))

    def deliver_observation(self, observation_id, t, session_id=None):
        return self._noted(self._referee.deliver_observation(observation_id, t, session_id), float(t))

    def _noted(self, records, t: float):
        if records and len(self.step_times) < len(self._chain):
            self.note(t)
        return records

    def note(self, t: float) -> None:
        scores = self._referee.scores(t)
        for name, holds in self._chain:
            if name not in self.step_times:
                if not holds(scores):
                    return
                self.step_times[name] = t
                self._keep_frame(f"step-{name}")


def _png(pixels) -> bytes:
    import cv2
    import numpy as np

    img = np.asarray(pixels)
    if img.ndim == 3 and img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".png", img)
    if not ok:
        raise RuntimeError("PNG encoding failed")
    return buf.tobytes()


def program_identity(family, system_name: str) -> dict:
    path = family.reference_systems.get(system_name, "")
    return {"system": system_name, "class": path, "labference_ros": __version__,
            "family": family.name, "generator": family.generator_version}


def certify_instance(family, instance, *, frames_dir: Path, frames_rel: str = "", system_name: str = "",
                     deadline_s: float | None = None, cameras: tuple[str, ...] = (), item: dict | None = None) -> dict:
    """One instance's certificate (a dict); never raises for the instance's own faults.
    item: the instance as its population file holds it (the hash the certificate names;
    default its own JSON)."""
    os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede the first mujoco import
    from labference_ros.oracle.continuation import run_in_world
    from labference_ros.oracle.world import World
    from labference_ros.policies import make

    system_name = system_name or family.reference_program
    deadline_s = float(deadline_s or deadline_of(family))
    item = item if item is not None else json.loads(instance.to_json())
    cert = {"schema": CERTIFICATE_SCHEMA, "instance_id": instance.instance_id,
            "instance_sha256": instance_sha256(item), "condition": instance.condition,
            "program": program_identity(family, system_name),
            "seeds": {"task_seed": instance.task_seed, "layout_seed": instance.layout_seed,
                      "policy_seed": instance.policy_seed},
            "layout_hash": instance.layout_hash, "scene_hash": None, "deadline_s": deadline_s,
            "steps": [], "frames": [], "verdict": None, "failing_step": None, "reason": None,
            "certified_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    checks: list[dict] = []  # in certification order; the first failing one is the verdict's

    def check(name, ok, reason="", t=None):
        checks.append({"name": name, "holds": bool(ok), "t": t, **({"reason": reason} if not ok else {})})
        return bool(ok)

    world = system = None
    frames_dir = Path(frames_dir)
    for stale in frames_dir.glob("*.png"):  # an earlier certification's frames
        stale.unlink()
    try:
        try:
            contract = family.contract_for(instance.condition)
            chain = tuple(family.certification_steps(instance.condition))
            world = World(instance)
            cert["scene_hash"] = world.backend.scene_hash()
            cert["contract"] = contract.content_hash
            referee = family.make_referee(contract, instance, episode_id=f"certify:{instance.instance_id}",
                                          session_id="certify", deadline_s=deadline_s)
            system = make(system_name, task=family.name)
        except Exception as exc:  # noqa: BLE001 -- any fault here is the instance's compile failure
            check("compile", False, f"{type(exc).__name__}: {exc}")
            return _verdict(cert, checks)
        check("compile", True, t=0.0)
        cams = tuple(c for c in (cameras or family.cameras[:1]) if c in world.cameras) or world.cameras[:1]

        def keep_frame(label):
            for cam in cams:
                pixels = world.backend.render(cam)
                data = _png(pixels)
                name = f"{len(cert['frames']):02d}-{label}-{cam}.png"
                frames_dir.mkdir(parents=True, exist_ok=True)
                (frames_dir / name).write_bytes(data)
                import numpy as np

                arr = np.asarray(pixels)
                cert["frames"].append({"file": f"{frames_rel}{name}" if frames_rel else name, "camera": cam,
                                       "label": label, "t": round(world.t, 6),
                                       "sha256": hashlib.sha256(data).hexdigest(),
                                       "blank": bool(arr.size == 0 or arr.min() == arr.max())})

        watched = _WatchedReferee(referee, chain, keep_frame)
        rejected: list[str] = []

        def record(entry):
            if entry.get("record") == "chunk" and entry.get("status") not in ("accepted", "clipped"):
                rejected.append(f"{entry.get('status')} at t={entry.get('t', 0):.2f}: "
                                + "; ".join(entry.get("reasons") or []))

        session = f"certify-{instance.instance_id}"
        try:
            world.start_environment()  # what the cell does on its own (lab_sim's, from the start)
            system.reset(session, instance.policy_seed)
            watched.step(world.measure())
            keep_frame("start")
            end = run_in_world(system, world, watched, session=session, deadline_t=deadline_s,
                               stop_hold_s=float(os.environ.get("LABFERENCE_CERTIFY_STOP_HOLD_S", 4.0)),
                               record=record)
            keep_frame("end")
        except Exception as exc:  # noqa: BLE001 -- a fault of the episode is the instance's execution failure
            check("execute", False, f"{type(exc).__name__}: {exc}", t=round(world.t, 6))
            return _verdict(cert, checks)
        t_end = round(world.t, 6)
        cert["end_reason"], cert["sim_time_s"] = end, t_end
        planning = [d for d in getattr(system, "decisions", []) if isinstance(d, dict) and d.get("planning_error")]
        note = ("; the program could not plan: " + "; ".join(
            f"{d.get('object', '?')}: {d['planning_error']}" for d in planning)) if planning else ""
        check("execute", not rejected, f"{len(rejected)} chunk(s) of the program were refused: {rejected[0]}"
              if rejected else "", t=t_end)
        scores = referee.scores(world.t)
        watched.note(world.t)
        prefix = True
        for name, holds in chain:
            prefix = prefix and bool(holds(scores))
            t = watched.step_times.get(name)
            cert["steps"].append({"name": name, "holds": prefix, "t": None if t is None else round(t, 6)})
            check(name, prefix, f"step {name} does not hold at the end ({end}, t={t_end:.2f} s){note}",
                  t=None if t is None else round(t, 6))
        check("choices", *_choices(scores, note), t=t_end)
        check("clean_end", *_clean_end(scores, end, note), t=t_end)
        blank = [f["file"] for f in cert["frames"] if f["blank"]]
        check("frames", bool(cert["frames"]) and not blank,
              f"blank key frame(s): {', '.join(blank)}" if blank else "no key frame rendered", t=t_end)
        cert["scores"] = {k: scores.get(k) for k in ("completion_class", "physically_complete", "valid_complete",
                                                     "clean_complete", "first_choice_correct", "executed")}
        return _verdict(cert, checks)
    finally:
        if system is not None:
            system.close()
        if world is not None:
            world.close()


def _choices(scores: dict, note: str) -> tuple[bool, str]:
    """Every native opportunity: a first choice, in its legal set, physically confirmed."""
    recs = sorted(scores.get("opportunity_records") or [], key=lambda o: o.get("opportunity_id", 0))
    native = [o for o in recs if o.get("native_scorable")]
    if not native:
        return False, f"no opportunity where the program could choose{note}"
    for o in native:
        oid = o.get("opportunity_id")
        if o.get("first_choice") is None:
            return False, f"opportunity {oid}: no choice identified{note}"
        if o.get("choice_correct") is not True:
            return False, f"opportunity {oid}: first choice {o.get('first_choice')} not in its legal set"
        if o.get("execution") != "confirmed":
            return False, f"opportunity {oid}: first choice not physically confirmed ({o.get('execution')}){note}"
    return True, ""


def _clean_end(scores: dict, end: str, note: str) -> tuple[bool, str]:
    violations = scores.get("violations") or {}
    bad = {k: v for k, v in violations.items() if v} if isinstance(violations, dict) else violations
    if bad:
        return False, f"safety/validity violations: {bad}"
    if end == "deadline":
        return False, f"stopped by the deadline{note}"
    if scores.get("clean_complete") is not True:
        return False, f"no clean completion (class {scores.get('completion_class')}){note}"
    return True, ""


def _verdict(cert: dict, checks: list[dict]) -> dict:
    cert["checks"] = checks
    failing = next((c for c in checks if not c["holds"]), None)
    cert["verdict"] = CERTIFIED if failing is None else REJECTED
    if failing is not None:
        cert["failing_step"], cert["reason"] = failing["name"], failing.get("reason", "")
    return cert


# -- a population ---------------------------------------------------------------------------
def certify_instances(family, instances, frames_root: Path, frames_rel: str = "", system_name: str = "",
                      deadline_s: float | None = None, cameras=(), progress=None, items=None) -> dict[str, dict]:
    """instance id -> certificate; frames under frames_root/<instance id>/. items: the
    instances as their file holds them (default their own JSON)."""
    out = {}
    items = list(items) if items is not None else [None] * len(instances)
    for inst, item in zip(instances, items):
        cert = certify_instance(family, inst, frames_dir=Path(frames_root) / inst.instance_id,
                                frames_rel=f"{frames_rel}{inst.instance_id}/", system_name=system_name,
                                deadline_s=deadline_s, cameras=tuple(cameras), item=item)
        out[inst.instance_id] = cert
        if progress is not None:
            progress(cert)
    return out


def certify_population(pop, *, task: str = "", system_name: str = "", deadline_s: float | None = None,
                       cameras=(), frames: str = "certification", progress=None, drop_rejected: bool = False) -> dict:
    """Certify every instance of a population file and write the certificates back
    into it (frames under its folder, in `frames`/<instance id>/). drop_rejected: the
    population is fixed without its rejected instances (kept, with their certificates,
    under certification.rejected_instances, so the summary still counts them).
    Returns the summary over every instance the population was generated with."""
    path = population_file(pop)
    data = read_population(path)
    family = family_of_population(data, task)
    try:
        instances = [family.instance_from_json(json.dumps(d)) for d in data["instances"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise CertificationError(f"{path}: an instance does not read as {family.name}'s ({exc})") from None
    if system_name and system_name not in family.reference_systems:
        raise CertificationError(f"{system_name!r} is not a reference system of {family.name}; "
                                 f"known: {', '.join(sorted(family.reference_systems))}")
    rel = frames.rstrip("/") + "/"
    certs = certify_instances(family, instances, path.parent / frames, rel, system_name, deadline_s, cameras,
                              progress, items=data["instances"])
    section = dict(data.get("certification") or {})
    certificates = certificates_of(data)
    certificates.update(certs)
    dropped = list(section.get("rejected_instances") or [])
    if drop_rejected:
        dropped += [i for i in data["instances"] if certs[i["instance_id"]]["verdict"] == REJECTED]
        data["instances"] = [i for i in data["instances"] if certs[i["instance_id"]]["verdict"] != REJECTED]
    ids = [i["instance_id"] for i in data["instances"]] + [i["instance_id"] for i in dropped]
    s = summary(certificates, ids)
    s["dropped"] = len(dropped)
    data["certification"] = {"schema": CERTIFICATE_SCHEMA, "certificates": certificates, "summary": s,
                             **({"rejected_instances": dropped} if dropped else {})}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return s
