"""Matched continuations (paper 6.4): from one verified checkpoint, run the
tested system with no support (base) or with one support condition. Both
branches share checkpoint, system, seeds, sensors and budget; they differ
only by what the Oracle delivers, so they are bit-identical until the
first delivered support.

The loop is the graph's: core.episode_loop.EpisodeLoop, driven here in one
process (run_in_world) as the policy bridge drives it over ROS: observe ->
deliver (referee receipt) -> Oracle handoff (scope check, receipt) -> act ->
reports -> chunk check -> command -> advance; the referee is fed a
measurement after every hold interval."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from labference_ros import __version__

from labference_ros.core.action_conversion import identity
from labference_ros.core.episode_loop import STOP_HOLD_S, EpisodeLoop
from labference_ros.core.geometry import body_axis, geometry_errors
from labference_ros.core.operations import Operation
from labference_ros.core.records import RunRecords, final_status, run_info
from labference_ros.perception.camera import world_camera_calibration
from labference_ros.policies import make
from labference_ros.skills.safety_modes import for_episode, safety_check, safety_record

from .checkpoints import Checkpoint
from .executor import ReferenceExecutor
from .supports import (CHECKPOINT_CONTINUATION, COMPATIBLE, Support, compatibility, condition_name,
                       intervention_identity, parse_condition)
from .world import World

DEFAULT_BUDGET_S = 25.0  # sim seconds after the handoff, same for every branch
FIXED_SUBGOAL = "replace:decision+replace:geometry"  # what a fixed-subgoal start supplies in every branch


@dataclass
class BranchResult:
    checkpoint_id: str
    condition: str
    status: str  # "ok" | "unresolved" | "incompatible:..."
    reason: str = ""
    choice: dict | None = None  # first choice after the handoff (behavioural, else reported)
    choice_correct: bool | None = None
    completed: bool | None = None
    # The first opportunity after the handoff, for the checkpoint population J (paper eq. 4-5):
    # was its evidence delivered, was a physical operation legal there, its legal set, and
    # the native (behavioural) first choice alone. None: the branch did not run.
    evidence_delivered: bool | None = None
    native_scorable: bool | None = None
    legal_set: list[dict] | None = None
    native_choice: dict | None = None
    receipts: list[dict] = field(default_factory=list)
    executor_attempts: list[dict] = field(default_factory=list)
    first_delivery_step: int | None = None
    readout_abs_error_g: float | None = None  # state interface: own report vs displayed, first decision
    geometry_error: dict | None = None  # geometry interface: own frame of the first selected target (eq. 2)
    trace: list[str] = field(default_factory=list)  # sim-state sha256 per hold interval
    scores: dict | None = None  # the branch referee's scores.json, as the graph's referee writes it
    # Fixed-subgoal starts only (population K, eq. 6): the correct operation and reference
    # geometry were delivered at the first opportunity; the supplied operation was confirmed.
    subgoal_supplied: bool | None = None
    subgoal_confirmed: bool | None = None

    @property
    def resolved(self) -> bool:
        return self.status == "ok"


def _sha(world: World) -> str:
    return hashlib.sha256(world.backend.save_state()).hexdigest()


class _Oracle:
    """Delivers one condition's supports at each registered handoff (a newly
    opened opportunity) and keeps a receipt per intervention."""

    def __init__(self, condition, referee, world: World, system):
        self.condition, self.referee, self.world, self.system = condition, referee, world, system
        self.receipts: list[dict] = []
        self._done: set[tuple[int, str]] = set()
        self.delivered_any = False

    def _check(self, support: Support, payload: dict, opp) -> dict:
        iv = {"mode": support.mode, "site": support.site, "opportunity_id": opp.id if opp else -1,
              "evidence_version": self.referee.z.evidence_version, "payload": payload}
        rec = self.referee.check_intervention(iv, self.world.t)[0]
        receipt = {**rec, "payload": payload, "original_output": None, "substituted_output": payload,
                   "first_subsequent_choice": None, "agreement": None}
        self.receipts.append(receipt)
        return receipt

    def reference_frame(self, name: str) -> dict | None:
        o = self.world.measure().objects.get(name)
        if o is None:
            return None
        return {"object": name, "position": [float(v) for v in o.position],
                "axis": [float(v) for v in body_axis(o.orientation)]}

    def candidate_frames(self) -> list[dict]:
        return self.world.family.geometry_frames(self.world.measure().objects)

    def handoff(self) -> None:
        opp = self.referee.book.current
        if opp is None or opp.status != "open":
            return
        for s in self.condition:
            if s.site == "skill" or (s.site == "geometry" and s.mode == "replace") or (opp.id, s.site) in self._done:
                continue  # skill and geometry replacement are checked when the system's output exists
            self._done.add((opp.id, s.site))
            if s.site == "state":
                payload = self.world.family.state_payload(self.world)
            elif s.site == "decision":
                op = self.world.family.decision_rule(opp.legal_set)
                payload = {"operation": op.to_dict()}
            elif s.site == "geometry":
                payload = {"candidates": self.candidate_frames()}
            else:
                payload = {}
            r = self._check(s, payload, opp)
            if r["status"] == "delivered":
                self.system.supply(s.site, s.mode, payload)
                self.delivered_any = True

    def geometry_replace(self, name: str, own: dict | None) -> dict | None:
        """Replace at the geometry hook: the selected target keeps its identity
        and gets the reference localization; the system's own frame is kept."""
        support = next(s for s in self.condition if s.site == "geometry")
        payload = self.reference_frame(name)
        if payload is None:
            return None
        r = self._check(support, payload, self.referee.book.current)
        r["original_output"] = own
        if r["status"] != "delivered":
            return None
        self.delivered_any = True
        return payload

    def skill_attempt(self, op: Operation) -> bool:
        support = next(s for s in self.condition if s.site == "skill")
        r = self._check(support, {"operation": op.to_dict()}, self.referee.book.current)
        r["substituted_output"] = {"executor": ReferenceExecutor.name, "operation": op.to_dict()}
        r["first_subsequent_choice"] = op.to_dict()
        self.delivered_any = self.delivered_any or r["status"] == "delivered"
        return r["status"] == "delivered"

    def after_decision(self, entry: dict) -> None:
        """Fill the open receipts with the original output and the first subsequent choice."""
        for r in self.receipts:
            if r["status"] != "delivered" or r["first_subsequent_choice"] is not None:
                continue
            if r["site"] != "geometry":  # a geometry receipt keeps the frame it replaced
                r["original_output"] = entry["state_original"] if r["site"] == "state" else entry["operation_original"]
            r["first_subsequent_choice"] = entry["operation_used"]
            if r["site"] == "decision":
                r["agreement"] = entry["operation_used"] == r["payload"]["operation"]


class _RecordedReferee:
    """The branch's referee, every output of it also written to the branch's run
    records (core.records.RunRecords, as the referee node writes them)."""

    _SCORED_CALLS = ("step", "deliver_observation", "report_operation", "check_intervention", "finish")

    def __init__(self, referee, records: RunRecords):
        self._referee, self._records = referee, records

    def __getattr__(self, name):
        attr = getattr(self._referee, name)
        if name not in self._SCORED_CALLS:
            return attr

        def recorded(*args, **kwargs):
            out = attr(*args, **kwargs)
            self._records.write_all(r for r in out if r.get("record") != "scores")
            return out

        return recorded


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def delivered_supports(cp: Checkpoint, condition: tuple[Support, ...]) -> tuple[Support, ...]:
    """What the Oracle delivers in a branch: the registered condition, and at a
    fixed-subgoal start also the correct operation and the reference geometry
    (they take the decision and geometry sites over from the condition)."""
    if not cp.spec.fixed_subgoal:
        return tuple(condition)
    fixed = parse_condition(FIXED_SUBGOAL)
    sites = {s.site for s in fixed}
    return fixed + tuple(s for s in condition if s.site not in sites)


def _fixed_subgoal_outcome(res: BranchResult, referee, receipts: list[dict]) -> None:
    """At a fixed-subgoal start: was the subgoal supplied at the first opportunity
    (the decision and a geometry frame delivered), and was it physically confirmed
    (the first choice is the supplied operation and its execution confirmed)?"""
    first = referee.opportunities[0] if referee.opportunities else None
    decision = [r for r in receipts if r["site"] == "decision" and first is not None
                and r["opportunity_id"] == first.id and r["status"] == "delivered"]
    # The reference geometry reached the system's localization, or a reference
    # executor (skill replacement) used it itself.
    geometry = [r for r in receipts if r["site"] in ("geometry", "skill") and r["status"] == "delivered"]
    res.subgoal_supplied = bool(decision and geometry)
    if not res.subgoal_supplied:
        return
    supplied = Operation.from_dict(decision[0]["payload"]["operation"])
    res.subgoal_confirmed = first.first_choice == supplied and first.execution == "confirmed"


def _branch_records(records_dir, cp: Checkpoint, registered, condition, world: World, system, referee,
                    handoff_inst, budget_s: float, safety: str) -> RunRecords:
    """<records_dir>/<system>/<condition>/episodes/<checkpoint>/: run.json and the referee's
    records of one branch, laid out like a launch so `labference report` reads it.
    ``registered``: the condition the branch belongs to; ``condition``: what was delivered."""
    name = condition_name(registered)
    family = world.family
    intervention = (intervention_identity(condition, CHECKPOINT_CONTINUATION) if condition
                    else {"mode": "none", "protocol": CHECKPOINT_CONTINUATION})
    info = run_info(family.contract_for(handoff_inst.condition), handoff_inst, episode_id=referee.episode_id,
                    policy={**system.profile(), **safety_record(safety)}, observation=world.observation_identity(),
                    intervention=intervention, budgets={"deadline_sim_s": cp.t + budget_s},
                    assets={**family.assets(), "scene_hash": world.backend.scene_hash()},
                    versions={"labference_ros": __version__})
    if cp.spec.fixed_subgoal:
        info["execution_population"] = "fixed"  # the report's E_fixed population K (core.populations)
    info["checkpoint"] = {"checkpoint_id": cp.spec.checkpoint_id, "t": cp.t,
                          "snapshot_sha256": cp.snapshot.sha256 if cp.snapshot else None,
                          "prefix": [op.to_dict() for op in cp.spec.prefix]}
    if cp.spec.executed is not None:  # the robot did otherwise than the history says
        info["checkpoint"]["executed"] = [op.to_dict() for op in cp.spec.executed]
    episode = Path(records_dir) / _safe(system.name) / _safe(name) / "episodes" / _safe(cp.spec.checkpoint_id)
    return RunRecords(episode, info)


def run_branch(cp: Checkpoint, system_name: str, condition: tuple[Support, ...] = (), *,
               params: dict | None = None, budget_s: float = DEFAULT_BUDGET_S,
               after_finish_s: float = STOP_HOLD_S, trace: bool = False,
               records_dir=None, safety: str = "none") -> BranchResult:
    """One branch from a verified checkpoint. ``records_dir``: also write the branch's
    run records there (see _branch_records), readable by `labference report`.
    ``safety``: "franka" checks every chunk against the Panda's envelope, as the policy
    bridge does with safety:=franka (a violating chunk is rejected and the arm holds)."""
    name = condition_name(condition)
    res = BranchResult(cp.spec.checkpoint_id, name, "ok")
    envelope = safety_check(safety)  # a bad mode is refused before anything is built
    system = make(system_name, task=cp.spec.family.name, **(params or {}))
    registered = condition
    condition = delivered_supports(cp, condition)
    # Capability preflight first: compatibility does not depend on the checkpoint.
    for s in condition:
        c = compatibility(system, s)
        if c != COMPATIBLE:
            res.status, res.reason = c, str(s)
            return res
    if not cp.verified:
        res.status, res.reason = "unresolved", f"preparation_failed: {cp.reason}"
        return res
    inst = cp.spec.instance
    world = World(inst)
    records = None
    try:
        envelope = for_episode(envelope, safety, world.family, inst)  # the robot modes: and its fixtures
        world.restore(cp.snapshot)
        world.start_environment()  # what the cell does on its own from the handoff on
        # The referee starts from the verified handoff, not the raw initialization.
        handoff_inst = world.family.handoff_instance(inst, cp.state)
        referee = world.family.make_referee(world.family.contract_for(handoff_inst.condition), handoff_inst,
                                            episode_id=f"{cp.spec.checkpoint_id}:{name}", session_id="",
                                            deadline_s=cp.t + budget_s)
        if records_dir is not None:
            records = _branch_records(records_dir, cp, registered, condition, world, system, referee,
                                      handoff_inst, budget_s, safety)
            referee = _RecordedReferee(referee, records)
        session = f"oracle-{cp.spec.checkpoint_id}"
        system.reset(session, inst.policy_seed)
        system.receive_prefix(list(cp.prefix_record))  # the same authorized history in every branch
        oracle = _Oracle(condition, referee, world, system)
        if any(s.site == "skill" for s in condition):
            system.executor = ReferenceExecutor(world, system.spec.control_frequency_hz, oracle.skill_attempt)
        if any(s.site == "geometry" and s.mode == "replace" for s in condition):
            system.geometry_hook = oracle.geometry_replace
        referee.step(world.measure())
        if trace:
            res.trace.append(_sha(world))  # the restored handoff state
        reason = _loop(system, world, referee, oracle, res, session, cp.t + budget_s, after_finish_s, trace,
                       envelope)
        _outcomes(res, referee, world.family)
        if cp.spec.fixed_subgoal:
            _fixed_subgoal_outcome(res, referee, oracle.receipts)
        res.scores = referee.scores()
        res.receipts = oracle.receipts
        res.executor_attempts = list(system.executor.attempts) if getattr(system, "executor", None) else []
        _executor_outcomes(res.executor_attempts, referee)
        if records is not None:  # last: the records say final only for a branch that is
            records.write_scores(res.scores, status=final_status(reason))
        return res
    except Exception as e:  # noqa: BLE001 -- a branch fault is a validity event, kept as unresolved
        res.status, res.reason = "unresolved", f"branch_fault: {type(e).__name__}: {e}"
        if records is not None and not records.scores_written:
            try:  # the branch's records say it was not a valid evaluation
                records.write_scores(referee.scores(), status="branch_fault")
            except Exception:  # noqa: BLE001 -- the fault itself is already recorded in res
                pass
        return res
    finally:
        if records is not None:
            records.close()
        system.close()
        world.close()


def _loop(system, world, referee, oracle, res, session, end_t, after_finish_s, trace, envelope=None) -> str:
    def before_act():
        was = oracle.delivered_any
        oracle.handoff()
        if oracle.delivered_any and not was and res.first_delivery_step is None:
            res.first_delivery_step = len(res.trace)
        log = getattr(system, "interface_log", None)
        geo = getattr(system, "geometry_log", None)
        return was, len(log) if log is not None else 0, len(geo) if geo is not None else 0

    def after_act(marks):
        was, n_log, n_geo = marks
        if oracle.delivered_any and not was and res.first_delivery_step is None:
            res.first_delivery_step = len(res.trace)  # skill support delivered inside act
        geo = getattr(system, "geometry_log", None)
        if geo is not None and res.geometry_error is None:
            for entry in geo[n_geo:]:
                ref, own = oracle.reference_frame(entry["object"]), entry["original"]
                if ref is not None:
                    err = (geometry_errors(own["position"], own["axis"], ref["position"], ref["axis"])
                           if own is not None else None)
                    res.geometry_error = {"object": entry["object"], **(err.to_dict() if err else
                                          {"valid": False, "e_p_m": None, "e_v_rad": None,
                                           "reason": "no_prediction"})}
                    break
        log = getattr(system, "interface_log", None)
        for entry in (log or [])[n_log:]:
            own = entry.get("state_original")
            if own is not None and res.readout_abs_error_g is None and world.reading is not None:
                res.readout_abs_error_g = abs(own["displayed_g"] - world.reading.displayed_g)
            oracle.after_decision(entry)

    def after_interval():
        if trace:
            res.trace.append(_sha(world))

    # Every branch shows the system the same ids (the checkpoint's), so the branches'
    # requests are identical until the first delivered support.
    return run_in_world(system, world, referee, session=session, deadline_t=end_t, stop_hold_s=after_finish_s,
                        before_act=before_act, after_act=after_act, after_interval=after_interval,
                        observation_episode_id=res.checkpoint_id, envelope=envelope)


def run_in_world(system, world, referee, *, session: str, deadline_t: float, stop_hold_s: float,
                 before_act=None, after_act=None, after_interval=None, record=None,
                 observation_episode_id: str | None = None, envelope=None) -> str:
    """One episode of `system` in a simulated `world`, scored by `referee`, driven
    through core.episode_loop.EpisodeLoop exactly as the policy bridge drives it
    in the graph (sync mode): observe -> deliver -> (Oracle handoff) -> act ->
    reports -> chunk check -> one row per hold interval, the referee fed a
    measurement after each. Here the referee's evidence is heard after every
    interval, before the next row is taken; in the graph it reaches the bridge
    whenever the referee node has scored the measurements, and the row the bridge
    sent ahead runs even when that evidence invalidates the chunk.
    Returns why it ended (the referee's finish reason).
    ``observation_episode_id``: the episode id the system sees (default the
    referee's); matched branches pass one id so their requests stay identical.
    ``envelope``: the safety envelope check the bridge runs with safety:=franka."""
    if not deadline_t > 0:
        raise ValueError("run_in_world needs a sim-time deadline")
    conversion = getattr(system, "action_conversion", None) or identity(system.spec)
    if conversion.reference != system.spec:
        raise ValueError(f"{system.name}: its action conversion targets another reference spec")
    loop = EpisodeLoop(system, conversion, episode_id=observation_episode_id or referee.episode_id,
                       instance=world.instance, stop_hold_s=stop_hold_s, deadline_s=deadline_t, record=record,
                       envelope=envelope)

    def hear(records):
        # What the referee node would publish and the bridge would hear.
        for r in records:
            if r["record"] == "opportunity":
                loop.note_evidence(int(r["evidence_version"]), r.get("delivered_observation_id") or "")
            elif r["record"] == "receipt" and r.get("kind") == "observation":
                loop.note_evidence(int(r["evidence_version"]), r["payload_id"])
                if r["payload_id"] == loop.obs_id:
                    loop.acknowledged(int(r["evidence_version"]))

    reason = "deadline"
    while not referee.finished:
        t = world.t
        stop = loop.stop_reason(t)
        if stop is not None:
            reason = stop
            break
        images, stamps, joints = world.sensors()
        calib = {"front": world_camera_calibration("front", *images["front"].shape[:2],
                                                   world.family.cell_description()).to_dict()}
        obs = loop.observe(t, images, stamps, joints, calib)
        hear(referee.deliver_observation(obs.observation_id, t, session))
        marks = before_act() if before_act else None
        ev = world.family.evaluator_view(world.instance, world.measure()) if system.privileged else None
        chunk = system.act(obs, ev)
        for report in loop.reports(t, system.name):
            hear(referee.report_operation(report.operation, t, None, report.evidence_version,
                                          source=report.source))
        if after_act:
            after_act(marks)
        loop.take_chunk(chunk, t)
        while not referee.finished:
            command = loop.next_command(world.t)
            if command is None:
                break
            if command.row is not None:
                check = world.backend.set_arm_targets(command.row[:7])
                if not check.ok:
                    raise RuntimeError(f"validated row rejected by the simulator: {check.reason}")
                if command.gripper is not None:
                    c = conversion.reference.gripper.command(command.gripper)
                    world.backend.set_gripper(c["width"], c["speed"], c["force"], c["epsilon_inner"],
                                              c["epsilon_outer"], c["grasp"])
            world.advance(conversion.reference.hold_interval_s)
            hear(referee.step(world.measure()))
            if after_interval:
                after_interval()
    if referee.finished:
        return referee.finished  # it ended the episode itself (completion, its deadline)
    referee.finish(world.t, reason)
    return reason


def _outcomes(res: BranchResult, referee, family) -> None:
    first = family.checkpoint_opportunity(referee.opportunities)
    op = None
    if first is not None:
        op = first.first_choice or first.first_report
    res.choice = op.to_dict() if op else None
    res.choice_correct = bool(first is not None and op is not None and op in first.legal_set)
    res.completed = bool(referee.z.physically_complete)
    res.evidence_delivered = bool(first is not None and first.delivered_observation_id)
    res.native_scorable = bool(first is not None and first.native_scorable)
    res.legal_set = [o.to_dict() for o in sorted(first.legal_set)] if first is not None else []
    res.native_choice = first.first_choice.to_dict() if first is not None and first.first_choice else None


def _executor_outcomes(attempts: list[dict], referee) -> None:
    """The executor's own success or failure: the referee's physical
    confirmation of the choice it realized (confirmed | failed | pending)."""
    for a in attempts:
        if a["status"] != "attempted":
            continue
        op = Operation.from_dict(a["operation"])
        opp = next((o for o in referee.opportunities if o.first_choice == op), None)
        a["outcome"] = opp.execution if opp is not None else "unidentified"
