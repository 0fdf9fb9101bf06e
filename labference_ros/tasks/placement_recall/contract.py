"""TaskContract for placement recall (paper 3.2 elements, 4.3, 8.3).

Plain frozen data: every threshold the paper fixes (the 3 s terminal window,
the retrieval choice as a sustained, descending pre-contact approach to a unique
hole) and every one it leaves to us (the rack, the seating thresholds shared
with centrifuge loading's insertion predicate, the approach recogniser's
numbers, the release region) is declared here, versioned and covered by the
content hash.

Operations: Insert(tube, hole) places a tube into a hole (destination = hole
label); Pick(tube, hole) retrieves it from a hole (the hole is what is scored);
Remove(tube, table) sets it down in the marked region; Wait; Stop.

Oracle sites (paper 6; oracle_scope.py): state (where the target stands now, in the
rack's own labels, and which holes hold a tube) and decision (one legal operation:
at the retrieval, Pick(target, hole)), each in Assist and Replace.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from labference_ros.core.contracts import HashedContract
from labference_ros.core.oracle_scope import OracleSites
from labference_ros.tasks.placement_recall.instances import (BINDING_CONDITIONS, CAPS, RELEASE_REGION, TARGET,
                                                             split_condition)
from labference_ros.tasks.placement_recall.rack import RackGeometry

TASK = "placement_recall"
RACK_OBJECT = "rack"  # the measured rack (its pose is the rack frame) and its contact identity
TCP_OBJECT = "tcp"  # the measured grip point (its pose; a real rig gets it from the arm's kinematics)
HISTORY_PROTOCOL = "online_once"


@dataclass(frozen=True)
class TubeGeometry:
    radius_m: float = 0.0075
    length_m: float = 0.080


@dataclass(frozen=True)
class SeatingThresholds:
    """A tube stands in a hole: upright, deep enough, inside the hole's guides,
    released, supported by the rack and still, continuously for dwell_s."""

    max_tilt_deg: float = 10.0  # paper 8.1/8.3: at most 10 deg from the hole's axis
    min_depth_fraction: float = 0.60  # paper 8.1: at least 60 % of the hole's depth, from the top face
    # Paper 8.1: the lateral offset of the tube's bottom from the hole's axis is bounded by
    # the guides' physical clearance at the tube's tilt (hole half-width - tube radius *
    # cos(tilt)), no allowance beyond it but the contact's penetration (a measurement
    # resolution, as for the rotor's sockets).
    contact_penetration_m: float = 0.00005
    dwell_s: float = 0.50  # paper 8.1: release and support over 0.5 s, continuously
    max_linear_mps: float = 0.005  # ours (8.1 "continuous stability"): still
    max_angular_rps: float = 0.05  # ours, as above


@dataclass(frozen=True)
class ApproachThresholds:
    """The rack recognisers (paper 5.3): a held tube's bottom entering a unique hole
    (placement), and the open hand's grip point descending over a unique hole before
    touching any tube (retrieval). Looser than seating: a choice is identified early."""

    margin_m: float = 0.002  # the hole's opening, grown by this, is the hole's approach column
    max_height_m: float = 0.080  # above the rack's top face (tube bottom, or grip point)
    min_descent_mps: float = 0.005
    hold_s: float = 0.10  # all of the above, over the same hole, this long
    max_open_tilt_deg: float = 30.0  # a held tube this close to upright


@dataclass(frozen=True)
class GuideHandoff:
    """A controller's handoff to a hole's passive guides (paper 8.2): the tube's bottom,
    where it passes the rack's top face, within lateral_m of the hole's axis (the
    physical clearance between tube and guides) and within max_tilt_deg of upright. It
    describes the entry; the seating predicate alone decides whether the placement held."""

    lateral_m: float
    max_tilt_deg: float = 5.0


@dataclass(frozen=True)
class ReleaseRegion:
    center: tuple[float, float] = RELEASE_REGION[0]
    half_size: tuple[float, float] = RELEASE_REGION[1]

    def contains(self, x: float, y: float) -> bool:
        return abs(x - self.center[0]) <= self.half_size[0] and abs(y - self.center[1]) <= self.half_size[1]


@dataclass(frozen=True)
class TerminalConditions:
    dwell_s: float = 3.0  # paper 8.1/8.3: the target released, upright and still in the region, 3 s from its first sample
    max_tilt_deg: float = 10.0


@dataclass(frozen=True)
class OpportunityRules:
    response_window_s: float = 60.0
    triggers: tuple[str, ...] = ("initial_readiness", "confirmed_change", "environment_transition")


# The Oracle sites (paper 6, Table 2) and what each may carry. A state names holes by
# the rack's own labels, which a turned rack keeps; what the environment did while the
# cameras were blocked, the reference and the legal set never leave the evaluator.
ORACLE_SITES = OracleSites(
    sites=("state", "decision"),
    state_payload_keys=("target_hole", "occupied_holes"),
    decision_payload_keys=("operation",),
    hidden_keys=("legal_set", "legal_operations", "reference_state", "state_json", "placed_hole",
                 "intended_hole", "movement", "moved_rack_pose", "transitions"))


@dataclass(frozen=True)
class PlacementContract(HashedContract):
    task: str
    condition: str  # the family's condition: setting and caps, e.g. "extended-same"
    setting: str  # "basic" | "extended"
    caps: str  # "same" | "distinct"
    version: str
    state_variables: tuple[str, ...]
    authorized_evidence: tuple[str, ...]
    history_protocol: str
    operation_types: tuple[str, ...]
    exposes_wait: bool
    exposes_stop: bool
    stop_requires_completion: bool
    rack: RackGeometry
    tube: TubeGeometry
    seating: SeatingThresholds
    approach: ApproachThresholds
    guide_handoff: GuideHandoff
    release_region: ReleaseRegion
    terminal: TerminalConditions
    opportunities: OpportunityRules
    diagnostics: OracleSites = ORACLE_SITES
    target: str = TARGET
    # The scored reporting tracks besides the native choices (paper 4.3): explicit slot
    # reports and symbolic retrieval commitments (core.system.COMMITMENT_SOURCE).
    report_tracks: tuple[str, ...] = ("explicit", "commitment")
    # A held-out object binding (cell description `bindings`; docs/protocol.md): the tubes
    # this condition's scenes hold instead of the default ones (None: the default tubes; its
    # `tube` is their geometry), and the condition whose instances it rebinds.
    binding: str | None = None
    rebinds: str | None = None

    @property
    def contract_id(self) -> str:
        return f"{self.task}.{self.condition}@{self.version}"

    @property
    def evaluation_steps(self) -> tuple[str, ...]:
        from labference_ros.tasks.placement_recall.evaluation import EVALUATION_STEPS

        return EVALUATION_STEPS


_STATE_VARIABLES = ("phase", "occupied", "intended_hole", "placed_hole", "transitions", "retrieved",
                    "terminal_dwell_s", "physically_complete", "evidence_version")
_EVIDENCE = ("camera:front", "camera:wrist", "robot_state", "public_instruction", "authorized_history")


# The held-out tubes (cell/placement_cell.yaml binding `slim_tubes`): slimmer and longer,
# amber; they fit the rack's holes with more clearance and stand higher out of them.
HELDOUT_TUBE = TubeGeometry(radius_m=0.0060, length_m=0.095)
_BOUND_TUBES = {"slim_tubes": HELDOUT_TUBE}


def contract_for(condition: str, caps: str | None = None) -> PlacementContract:
    """basic: an empty rack and a still occlusion; extended: three distractors, the rack
    may turn. caps: "same" (all tubes alike) or "distinct" (one cap colour each); the
    condition may carry it instead, as the family names its conditions ("basic-distinct").
    A held-out binding's condition (heldout_tubes): the contract of the condition it
    rebinds with the bound tubes' geometry (and so their guides' clearance); every
    seating, approach and terminal rule is the rebound condition's."""
    if condition in BINDING_CONDITIONS:
        if caps is not None:
            raise ValueError(f"condition {condition} names its caps itself (those of {BINDING_CONDITIONS[condition][0]})")
        rebound, binding = BINDING_CONDITIONS[condition]
        base = contract_for(rebound)
        tube = _BOUND_TUBES[binding]
        return _fits(replace(base, condition=condition, tube=tube, binding=binding, rebinds=rebound,
                             guide_handoff=replace(base.guide_handoff,
                                                   lateral_m=round(base.rack.hole_half_m - tube.radius_m, 6))))
    if caps is None:
        condition, caps = split_condition(condition)
    if condition not in ("basic", "extended"):
        raise ValueError(f"unknown placement-recall condition {condition!r}")
    if caps not in CAPS:
        raise ValueError(f"unknown cap condition {caps!r}; caps: {', '.join(CAPS)}")
    rack, tube = RackGeometry(), TubeGeometry()
    contract = PlacementContract(
        task=TASK, condition=f"{condition}-{caps}", setting=condition, caps=caps, version="0.3.0",
        state_variables=_STATE_VARIABLES,
        authorized_evidence=_EVIDENCE, history_protocol=HISTORY_PROTOCOL,
        operation_types=("insert", "pick", "remove", "wait", "stop"), exposes_wait=True, exposes_stop=True,
        stop_requires_completion=True, rack=rack, tube=tube, seating=SeatingThresholds(),
        approach=ApproachThresholds(), guide_handoff=GuideHandoff(lateral_m=round(rack.hole_half_m - tube.radius_m, 6)),
        release_region=ReleaseRegion(), terminal=TerminalConditions(),
        opportunities=OpportunityRules())
    return _fits(contract)


def _fits(contract: PlacementContract) -> PlacementContract:
    if contract.rack.hole_half_m <= contract.tube.radius_m:
        raise ValueError("the tube does not fit the rack's holes")
    return contract
