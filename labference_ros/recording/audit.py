"""Replay audit: rebuild an episode's referee records from its bag with the online
scorer and check them against the records the online referee wrote.

Exit codes of `labference audit` (docs/records.md):
0 agree: every scored input of the whole episode was in the bag and compared;
1 DISAGREE (report names record, field, online and audit values);
2 UNREADABLE or ALTERED: a bag or its records could not be read (the message
  names the file and byte offset where known), or a closed bag holds other than
  what its writer wrote (bytes failing their CRC, messages its metadata counts
  but the file lacks, named per topic);
3 partial: agrees as far as the evidence goes. The bag ends before the episode
  did (its recorder was killed and left it unclosed, it was recovered from such a
  bag, or the recorder was stopped before the episode's finish: an interrupted
  episode), or its recorder closed it without deliveries the referee acknowledged
  (its finish names them); records are compared up to the last instant the bag
  holds both a world state and a reading.
"""
from __future__ import annotations

import gc
import json
import pathlib
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from labference_ros.core.records import episode_deadline, final_status, read_jsonl, task_family_name
from labference_ros.tasks import family as task_family

from .bag_reader import BagAltered, BagError, EpisodeBagReader, resolve_bag
from .completeness import describe_gaps, gaps
from .compare import Finding, compare_stream, field_diffs, normalise, split_by_file
from .evidence import check_actions, check_opportunities, check_published_events
from .replay import AUDITED_TOPICS, read_inputs, rebuild

AGREE, DISAGREE, UNREADABLE, PARTIAL = 0, 1, 2, 3
# Which code a run of several episodes exits with: the worst one present.
SEVERITY = (DISAGREE, UNREADABLE, PARTIAL, AGREE)
PARTIAL_WORDS = "partial: agrees as far as the evidence goes"


@dataclass
class AuditResult:
    bag: pathlib.Path
    episode_id: str = ""
    findings: list[Finding] = field(default_factory=list)
    error: str = ""
    notes: list[str] = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    sim_duration_s: float = 0.0
    wall_s: float = 0.0
    truncated: str = ""  # the bag's writer was killed: what could be read and what was lost
    partial: str = ""  # why the bag holds less than the whole episode ('' when it holds all of it)
    altered: bool = False  # the error is a closed bag's content differing from what was written
    gaps: dict = field(default_factory=dict)  # per topic, messages the recorder did not write (its own tally)

    @property
    def code(self) -> int:
        if self.error:
            return UNREADABLE
        if self.findings:
            return DISAGREE
        return PARTIAL if self.partial else AGREE

    @property
    def verdict(self) -> str:
        if self.error:
            return "ALTERED" if self.altered else "UNREADABLE"
        if self.findings:
            return "DISAGREE (partial evidence)" if self.partial else "DISAGREE"
        return PARTIAL_WORDS if self.partial else "agree"


def _load_json(path: pathlib.Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BagError(f"{path}: missing (online records must sit next to the bag)") from None
    except ValueError as exc:
        raise BagError(f"{path}: not valid JSON: {exc}") from None


def _load_jsonl(path: pathlib.Path) -> list[dict]:
    try:
        return read_jsonl(path)
    except FileNotFoundError:
        raise BagError(f"{path}: missing (online records must sit next to the bag)") from None
    except ValueError as exc:
        raise BagError(f"{path}: a line is not valid JSON: {exc}") from None


def audit_episode(path: str | pathlib.Path) -> AuditResult:
    start = time.perf_counter()
    result = AuditResult(bag=pathlib.Path(path))
    # Name an unreadable episode by its directory (episode dir = parent of bag/).
    p = pathlib.Path(path)
    result.episode_id = (p.parent if p.name == "bag" else p).name
    try:
        with cyclic_gc_paused():
            _audit(result, path)
    except BagError as exc:
        result.error = str(exc)
        result.altered = isinstance(exc, BagAltered)
    result.wall_s = time.perf_counter() - start
    return result


@contextmanager
def cyclic_gc_paused():
    """No cyclic garbage collection inside: an audit builds tens of thousands of small
    measurement objects that stay alive until it ends, and the collector's passes over
    them (one every 700 allocations, some over the whole heap) took about an eighth of
    an audit. They form no reference cycles, so reference counting frees them all."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _audit(result: AuditResult, path) -> None:
    reader = EpisodeBagReader(path)
    result.bag = reader.dir
    result.truncated = reader.truncated
    records_dir = reader.dir.parent
    run = _load_json(records_dir / "run.json")
    online = {name: _load_jsonl(records_dir / name)
              for name in ("events.jsonl", "observations.jsonl", "online_scores.jsonl")}
    scores_path = records_dir / "scores.json"
    online_scores = _load_json(scores_path) if scores_path.exists() else None

    custom = reader.custom
    episode_id = custom.get("episode_id") or run.get("episode_id", "")
    result.episode_id = episode_id
    try:
        family = task_family(task_family_name(run))
    except (KeyError, ValueError) as exc:
        raise BagError(f"{records_dir / 'run.json'}: {exc}") from None
    instance = family.instance_from_json(custom.get("instance_json") or json.dumps(run["instance"]))
    contract = family.contract_for(instance.condition)
    result.findings += _identity(run, custom, instance, contract, episode_id)

    inputs = read_inputs(reader, episode_id)
    if inputs.undecodable:
        result.notes.append(f"{len(inputs.undecodable)} measurements could not be decoded and were left out, "
                            f"as the online referee leaves them out; the first: {inputs.undecodable[0]}")
    if inputs.dropped_before_reset:
        result.notes.append(f"{inputs.dropped_before_reset} world states before the last simulator reset ignored")
    finish = _finish(custom, online["events.jsonl"], inputs, result)
    reports = [r for r in online["observations.jsonl"] if r.get("record") == "report"]
    horizon = None
    result.partial = _partial_evidence(reader, custom)
    result.gaps = gaps(custom)
    if result.gaps:
        result.notes.append(f"recorder gaps: {describe_gaps(result.gaps)}")
        scored = {t: row for t, row in result.gaps.items() if t in AUDITED_TOPICS}
        if scored and not result.partial:
            result.partial = f"the bag lacks scored inputs the recorder missed ({describe_gaps(scored)})"
    if result.partial:
        result.notes.append(result.partial)
        evidence_end = min(inputs.paired_end, _first_undelivered_t(custom, online["observations.jsonl"]))
        if finish[0] > evidence_end:
            # The bag ends before the episode did: score what it holds, compare up to there.
            horizon = evidence_end
            finish = (horizon, finish[1])
            result.notes.append(f"records from t={horizon:.3f} s (the last instant the bag holds both a world "
                                f"state and a reading, and every delivery) and scores.json are not compared: the "
                                f"bag lacks them")
    late: list[dict] = []
    records = rebuild(family, inputs, instance, episode_id, finish, reports, deadline_s=episode_deadline(run),
                      late=late, contract=contract)
    final = normalise(records[-1])
    flat = [normalise(r) for r in records[:-1]]
    rebuilt = split_by_file(flat)

    for name in ("events.jsonl", "observations.jsonl", "online_scores.jsonl"):
        mine, theirs = online[name], rebuilt[name]
        if horizon is not None:
            mine, theirs = _before(mine, horizon), _before(theirs, horizon)
        result.findings += compare_stream(name, mine, theirs)
    if horizon is None:
        result.findings += _compare_scores(online_scores, final, final_status(finish[1]))
    result.findings += check_opportunities(flat)
    published, logged = inputs.referee_events, online["events.jsonl"]
    if horizon is not None:
        published = [m for m in published if _stamp_s(m) < horizon - 1e-9]
        logged = _before(logged, horizon)
    if result.partial:
        # The referee publishes an event after the measurement that caused it: a bag
        # that ends early can hold the measurement and not the event. Events written
        # after the last one the bag holds are not asked of it.
        last = max((_stamp_s(m) for m in published), default=float("-inf"))
        held = {m.event_id for m in published}
        logged = [e for e in logged if e.get("event_id") in held or not isinstance(e.get("t"), (int, float))
                  or e["t"] < last - 1e-9]
    result.findings += check_published_events(episode_id, published, logged)
    delivered_late = {r["payload_id"]: r["t"] for r in late if r.get("kind") == "observation"}
    chunks, policy_receipts = inputs.chunks, inputs.policy_receipts
    if horizon is not None:  # what the tested system did from the horizon on is not compared either
        chunks = [m for m in chunks if _stamp_s(m) < horizon - 1e-9]
        policy_receipts = [m for m in policy_receipts if _stamp_s(m) < horizon - 1e-9]
    result.findings += check_actions(episode_id, flat, chunks, policy_receipts, inputs.interventions,
                                     delivered_late)

    t0, t1 = inputs.sim_span
    result.sim_duration_s = t1 - t0
    result.counts = {"world_states": len(inputs.worlds), "readings": len(inputs.readings),
                     "deliveries": len(inputs.deliveries), "reports": len(reports),
                     "interventions": len(inputs.interventions), "chunks": len(inputs.chunks),
                     "events": sum(1 for r in flat if r["record"] == "event"),
                     "opportunities": sum(1 for r in flat if r["record"] == "opportunity")}


def _stamp_s(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def _partial_evidence(reader: EpisodeBagReader, custom: dict) -> str:
    """Why the bag cannot hold the whole episode ('' when its recorder finished it)."""
    if reader.truncated:
        return reader.truncated
    finish = json.loads(custom["finish"]) if custom.get("finish") else {}
    status = finish.get("status", "")
    if status == "finished":
        undelivered = finish.get("undelivered") or []
        if undelivered:
            return (f"the recorder closed the bag without the bridge's receipts of deliveries the referee "
                    f"acknowledged ({len(undelivered)}, the first {undelivered[0]})")
        return ""
    why = {"recovered": "rewritten closed from the unclosed bag of a recorder that was killed",
           "recorder_shutdown": "the recorder was stopped before the episode's finish (an interrupted run)",
           "superseded": "the recorder started another episode before this one's finish"}
    return (f"the bag's finish status is {status or 'absent'}: "
            f"{why.get(status, 'the recorder never recorded the episode finish')}")


def _first_undelivered_t(custom: dict, observations: list[dict]) -> float:
    """When the first delivery the bag lacks was made (the online referee's record of it),
    or +inf when the recorder's finish names none."""
    finish = json.loads(custom["finish"]) if custom.get("finish") else {}
    undelivered = set(finish.get("undelivered") or [])
    times = [r["t"] for r in observations
             if r.get("payload_id") in undelivered and isinstance(r.get("t"), (int, float))]
    return min(times, default=float("inf"))


def _before(records: list[dict], horizon: float) -> list[dict]:
    """Records strictly before the horizon (those at it may still miss inputs the bag lost)."""
    return [r for r in records if not isinstance(r.get("t"), (int, float)) or r["t"] < horizon - 1e-9]


def _identity(run: dict, custom: dict, instance, contract, episode_id: str) -> list[Finding]:
    out = []
    pairs = [("episode_id", run.get("episode_id"), episode_id),
             ("task.contract_hash", (run.get("task") or {}).get("contract_hash"), contract.content_hash),
             ("instance", run.get("instance"), json.loads(instance.to_json()))]
    if custom.get("contract_hash"):
        pairs.append(("bag custom_data contract_hash", custom["contract_hash"], contract.content_hash))
    for name, online, audit in pairs:
        for path, a, b in field_diffs(online, audit, name):
            out.append(Finding("identity", "run.json", "", path, a, b, "run description and bag disagree"))
    return out


def _finish(custom: dict, events: list[dict], inputs, result: AuditResult) -> tuple[float, str]:
    """When and why the episode was finished: the recorder's copy of the finish
    request; else (recorder stopped first) the online episode_end event."""
    fin = json.loads(custom["finish"]) if custom.get("finish") else {}
    if fin.get("status") == "finished" and "sim_time" in fin:
        return float(fin["sim_time"]), fin.get("reason", "")
    ends = [e for e in events if e.get("record") == "event" and e.get("category") == "episode_end"]
    if ends:
        result.notes.append("finish time and reason taken from the online episode_end event "
                            f"(bag status: {fin.get('status', 'unknown')})")
        return float(ends[-1]["t"]), (ends[-1].get("detail") or {}).get("reason", "")
    result.notes.append("no finish recorded anywhere: finished at the last measurement")
    return inputs.sim_span[1], "episode_end"


def _compare_scores(online: dict | None, audit: dict, status: str) -> list[Finding]:
    if online is None:
        return [Finding("records", "scores.json", "", "", "<missing>", "<present>", "no final scores were written")]
    online = dict(online)
    online.pop("records_schema", None)
    out = []
    if online.pop("status", None) != status:
        out.append(Finding("records", "scores.json", "final scores", "status", online.get("status"), status))
    audit = {k: v for k, v in audit.items() if k != "record"}
    for path, a, b in field_diffs(online, audit):
        out.append(Finding("records", "scores.json", "final scores", path, a, b))
    return out


# ------------------------------------------------------------------ run dirs
def find_episode_bags(path: str | pathlib.Path) -> list[pathlib.Path]:
    """One bag for a bag/episode dir; every episode bag below a run dir otherwise."""
    p = pathlib.Path(path)
    if not p.exists():
        raise BagError(f"{p}: no such file or directory")
    try:
        return [resolve_bag(p)]
    except BagError:
        pass
    bags = sorted({m.parent for pattern in ("*/metadata.yaml", "*/*.mcap") for m in p.rglob(pattern)
                   if m.parent.name == "bag"})
    if not bags:
        raise BagError(f"{p}: no episode bags found (expected <episode>/bag/ directories)")
    return bags


def audit_path(path: str | pathlib.Path, jobs: int = 1) -> list[AuditResult]:
    """Every episode under ``path``; ``jobs`` > 1 audits that many episodes at once
    (one process each; results in the same order)."""
    bags = find_episode_bags(path)
    if jobs <= 1 or len(bags) <= 1:
        return [audit_episode(b) for b in bags]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(jobs, len(bags))) as pool:
        return list(pool.map(audit_episode, bags))


def exit_code(results: list[AuditResult]) -> int:
    codes = {r.code for r in results}
    return next((code for code in SEVERITY if code in codes), AGREE)


def format_report(results: list[AuditResult]) -> str:
    lines = []
    for r in results:
        head = f"{r.episode_id or r.bag}: {r.verdict}"
        if r.error:
            lines.append(f"{head}\n  error: {r.error}")
            continue
        lines.append(f"{head} ({r.counts.get('events', 0)} events, {r.counts.get('opportunities', 0)} "
                     f"opportunities, {r.sim_duration_s:.2f} s sim, audit {r.wall_s:.2f} s)")
        lines += [f"  note: {n}" for n in r.notes]
        lines += [f"  {f.line()}" for f in r.findings]
    if len(results) > 1:
        lines.append("")
        lines.append(format_table(results))
    return "\n".join(lines)


def format_table(results: list[AuditResult]) -> str:
    rows = [("episode", "result", "events", "opps", "findings", "sim_s", "audit_s", "bag")]
    for r in results:
        rows.append((r.episode_id or "?", r.verdict, str(r.counts.get("events", "-")),
                     str(r.counts.get("opportunities", "-")), str(len(r.findings)) if not r.error else "-",
                     f"{r.sim_duration_s:.1f}", f"{r.wall_s:.2f}", str(r.bag)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
