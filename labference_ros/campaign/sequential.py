"""Pre-registered sequential comparisons in a campaign (docs/reporting.md, *Sequential comparisons*).

The spec declares, before anything runs,

    sequential:
      test: paired_mixture_martingale   # core/sequential.py
      metric: success                   # PASS: valid completion in a final scores.json
      alpha: 0.05                       # type I error, anytime-valid
      max_episodes: 40                  # per arm: the comparison stops there at the latest
      prior: 0.5                        # Beta(a, a) mixture (default Jeffreys)
      comparisons: [{candidate: ARM_ID, reference: ARM_ID}]

and the lock embeds it (with each comparison's unit order: the candidate's
locked instance list, which the reference must share), so its hash covers
the test, its error rate and its maximum. Pure decisions, no I/O but
reading finished results: the comparison reads the units in locked order up
to the first one either arm has not finished, and stops at the first unit
whose e-value crosses 1/alpha (`boundary`) or at max_episodes
(`max_reached`). The decision depends only on the outcomes in that order,
never on which chunk finished first, so any number of workers reaches the
same stop. Units after the stop are not needed: they are not launched (a
chunk already running when the stop came finishes and is kept in the
records, but never enters the decision).
"""
from __future__ import annotations

import json
from pathlib import Path

from labference_ros.core.sequential import DEFAULT_PRIOR, TEST_NAME, PairedSequentialTest

from .plan import Chunk

DEFAULT_ALPHA = 0.05


def design_of_spec(spec: dict, arms: list[dict]) -> dict:
    """The lock's `design`: fixed, or sequential with defaults filled in and each comparison's
    unit order. ValueError for a comparison that cannot run (unknown arm, unpaired lists, a
    maximum beyond the list, or a plan the spec does not follow)."""
    seq = spec.get("sequential")
    by_id = {a["arm_id"]: a for a in arms}
    if not seq:
        _check_fixed_plan(spec, arms)
        return {"kind": "fixed"}
    comparisons = []
    for k, comp in enumerate(seq["comparisons"]):
        where = f"sequential.comparisons[{k}]"
        for role in ("candidate", "reference"):
            if comp[role] not in by_id:
                raise ValueError(f"{where}.{role}: no arm {comp[role]!r}; arms: {', '.join(by_id)}")
        if comp["candidate"] == comp["reference"]:
            raise ValueError(f"{where}: candidate and reference are the same arm")
        order = [i["instance_id"] for i in by_id[comp["candidate"]]["instances"]]
        other = [i["instance_id"] for i in by_id[comp["reference"]]["instances"]]
        if order != other:
            raise ValueError(f"{where}: arms {comp['candidate']} and {comp['reference']} must run the same "
                             "instances in the same order (a paired comparison)")
        if seq["max_episodes"] > len(order):
            raise ValueError(f"sequential.max_episodes {seq['max_episodes']} exceeds the {len(order)} locked "
                             f"episodes of {comp['candidate']}")
        comparisons.append({"candidate": comp["candidate"], "reference": comp["reference"],
                            "order": order[: seq["max_episodes"]]})
    planned = ((spec.get("plan") or {}).get("sequential") or {}).get("max_episodes_per_arm")
    if planned and seq["max_episodes"] < planned:
        raise ValueError(f"sequential.max_episodes {seq['max_episodes']} is below the {planned} the spec's plan "
                         "needs for its power; raise it or plan again")
    return {"kind": "sequential",
            "sequential": {"test": seq.get("test", TEST_NAME), "metric": seq.get("metric", "success"),
                           "alpha": float(seq.get("alpha", DEFAULT_ALPHA)), "max_episodes": seq["max_episodes"],
                           "prior": float(seq.get("prior", DEFAULT_PRIOR)), "comparisons": comparisons}}


def _check_fixed_plan(spec: dict, arms: list[dict]) -> None:
    planned = ((spec.get("plan") or {}).get("fixed") or {}).get("episodes_per_arm")
    for arm in arms:
        if planned and len(arm["instances"]) < planned:
            raise ValueError(f"arm {arm['arm_id']} locks {len(arm['instances'])} episodes, below the {planned} "
                             "the spec's plan needs for its power; add episodes or plan again")


def sequential_design(lock: dict) -> dict | None:
    design = lock.get("design") or {}
    return design.get("sequential") if design.get("kind") == "sequential" else None


def outcome(scores: dict) -> bool:
    """The `success` metric: PASS, valid completion in a final scores.json."""
    return scores.get("valid_complete") is True


def arm_outcomes(out_dir: Path, arm_id: str) -> dict[str, bool]:
    """instance_id -> success of its first final result in the arm's attempts."""
    from .runner import finished

    out = {}
    for iid, dirs in finished(Path(out_dir) / arm_id).items():
        scores = json.loads((Path(dirs[0]) / "scores.json").read_text(encoding="utf-8"))
        out[iid] = outcome(scores)
    return out


def decide(design: dict, outcomes: dict[str, dict[str, bool]]) -> list[dict]:
    """Each comparison's state from the finished outcomes (arm_id -> instance_id -> success)."""
    out = []
    for comp in design["comparisons"]:
        test = PairedSequentialTest(alpha=design["alpha"], max_pairs=design["max_episodes"], prior=design["prior"])
        cand, ref = outcomes.get(comp["candidate"], {}), outcomes.get(comp["reference"], {})
        last = None
        for iid in comp["order"]:
            if iid not in cand or iid not in ref:
                break  # the next unit in locked order is not finished in both arms yet
            test.update(cand[iid], ref[iid])
            last = iid
            if test.stopped:
                break
        out.append({"candidate": comp["candidate"], "reference": comp["reference"], "last_unit": last,
                    **test.summary()})
    return out


def needed(design: dict, decisions: list[dict]) -> dict[str, set[str]]:
    """arm_id -> the instances its comparisons still need or used: the first max_episodes
    while any of them runs, else the units read up to the latest stop."""
    out: dict[str, set[str]] = {}
    for comp, dec in zip(design["comparisons"], decisions):
        count = len(comp["order"]) if dec["status"] == "running" else dec["pairs"]
        for arm in (comp["candidate"], comp["reference"]):
            out.setdefault(arm, set()).update(comp["order"][:count])
    return out


def pending_chunks(lock: dict, done: dict[str, set], decisions: list[dict]) -> list[Chunk]:
    """Unfinished needed episodes, cut into chunk_size pieces and interleaved across arms
    (first chunk of every arm, then the second, ...), so both arms of a comparison advance
    together and it can stop before either has run its maximum."""
    design = sequential_design(lock)
    want = needed(design, decisions)
    size = max(1, int(lock["chunk_size"]))
    per_arm = []
    for arm in lock["arms"]:
        keep = want.get(arm["arm_id"])
        pending = [i for i in arm["instances"] if i["instance_id"] not in done.get(arm["arm_id"], ())
                   and (keep is None or i["instance_id"] in keep)]
        per_arm.append([Chunk(arm, tuple(pending[k:k + size])) for k in range(0, len(pending), size)])
    rounds = max((len(c) for c in per_arm), default=0)
    return [chunks[r] for r in range(rounds) for chunks in per_arm if r < len(chunks)]


def still_needed(lock: dict, chunk: Chunk, decisions: list[dict]) -> bool:
    """False once every comparison the chunk's arm takes part in has stopped before its units."""
    keep = needed(sequential_design(lock), decisions).get(chunk.arm["arm_id"])
    return keep is None or any(i in keep for i in chunk.instance_ids)


def state(lock: dict, out_dir: Path) -> list[dict]:
    """The comparisons' decisions from what is on disk now."""
    design = sequential_design(lock)
    arms = {a for c in design["comparisons"] for a in (c["candidate"], c["reference"])}
    return decide(design, {a: arm_outcomes(out_dir, a) for a in arms})


def format_decision(d: dict) -> str:
    return f"sequential {d['candidate']} vs {d['reference']}: {d['status']} ({d['reason']})"
