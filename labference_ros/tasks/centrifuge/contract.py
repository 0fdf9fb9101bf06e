"""TaskContract for centrifuge loading (paper 3.2 elements, 4.1, 8.1).

Plain frozen data: every threshold the paper fixes (10 degrees, 60 % depth,
radial tolerance bounded by the clearance, 0.5 s release and support, 3 s
terminal window) and every one it leaves to us (rotor calibration, tube size,
the approach recogniser's thresholds) is declared here, versioned and covered
by the content hash.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.core.contracts import HashedContract
from labference_ros.core.external_events import ExternalEventSpec
from labference_ros.tasks.centrifuge.rotor import RotorGeometry

TASK = "centrifuge_loading"
TUBES = ("tube_a", "tube_b")  # the equal-mass pair


@dataclass(frozen=True)
class TubeGeometry:
    radius_m: float = 0.0075
    length_m: float = 0.080
    mass_kg: float = 0.012  # both tubes: an equal-mass pair


@dataclass(frozen=True)
class InsertionThresholds:
    """Physical confirmation of a seated tube (paper 8.1)."""

    max_axial_error_deg: float = 10.0  # paper 8.1: "at most 10 deg axial error"
    min_depth_fraction: float = 0.60  # paper 8.1: "at least 60 % of effective socket depth"
    # Paper 8.1: "a radial tolerance bounded by physical clearance": the radial offset of
    # the tube's bottom centre from the socket axis is at most the clearance the bore leaves
    # a tube at its measured tilt (bore radius - tube radius * cos(axial error): the
    # clearance itself for an aligned tube, 0.11 mm more at 10 degrees), no allowance
    # beyond it but the contact's penetration: a seated tube measured in MuJoCo leaned
    # 8 um into the bore wall alone and 32 um with the other tube resting on it. A
    # measurement resolution, not a tolerance: 5 % of the 1 mm clearance.
    contact_penetration_m: float = 0.00005
    dwell_s: float = 0.50  # paper 8.1: "release and support over 0.5 s", continuously
    max_linear_mps: float = 0.005  # ours (8.1 "continuous stability"): still
    max_angular_rps: float = 0.05  # ours, as above


@dataclass(frozen=True)
class ApproachThresholds:
    """The insertion recogniser (paper 5.3: "directed entry into a unique socket").
    Looser than the seating predicate: a choice is identified early."""

    max_lateral_m: float = 0.015  # tube bottom within this of one socket's axis line
    max_height_m: float = 0.060  # and at most this far above its mouth, along the axis
    max_axis_error_deg: float = 30.0
    min_descent_mps: float = 0.005  # moving into the socket along its axis
    hold_s: float = 0.10  # all of the above, towards the same slot, this long


@dataclass(frozen=True)
class TerminalConditions:
    dwell_s: float = 3.0  # paper 8.1: "final opposite occupancy persists for 3 s", from its first sample


@dataclass(frozen=True)
class OpportunityRules:
    response_window_s: float = 60.0
    triggers: tuple[str, ...] = ("initial_readiness", "confirmed_change", "failed_attempt")


@dataclass(frozen=True)
class DiagnosticInterfaces:
    sites: tuple[str, ...] = ("state", "decision", "geometry", "skill")
    state_payload_keys: tuple[str, ...] = ("occupied_slots",)
    decision_payload_keys: tuple[str, ...] = ("operation",)
    geometry_payload_keys: tuple[str, ...] = ("slot", "mouth", "axis", "candidates")
    skill_payload_keys: tuple[str, ...] = ("operation",)
    hidden_keys: tuple[str, ...] = ("legal_set", "legal_operations", "reference_state", "state_json",
                                    "first_intended_slot")


@dataclass(frozen=True)
class CentrifugeContract(HashedContract):
    task: str
    condition: str  # "basic" | "extended" | "hidden_event"
    version: str
    state_variables: tuple[str, ...]
    authorized_evidence: tuple[str, ...]
    operation_types: tuple[str, ...]
    exposes_wait: bool
    exposes_stop: bool
    stop_requires_completion: bool
    rotor: RotorGeometry
    tube: TubeGeometry
    insertion: InsertionThresholds
    approach: ApproachThresholds
    terminal: TerminalConditions
    opportunities: OpportunityRules
    diagnostics: DiagnosticInterfaces
    tubes: tuple[str, ...] = field(default=TUBES)
    initially_seated: int = 0  # tubes already stably seated at the start (basic: 1)
    # An external event at a hidden time (core.external_events): until it happens the
    # legal set is Wait and touching an affected object is a premature interaction.
    external_event: ExternalEventSpec | None = None
    # A held-out object binding (cell description `bindings`; docs/protocol.md): the tubes
    # this condition's scenes hold instead of the default ones (None: the default tubes; its
    # `tube` is their geometry), and the condition whose instances it rebinds.
    binding: str | None = None
    rebinds: str | None = None

    @property
    def clearance_m(self) -> float:
        return self.rotor.bore_radius_m - self.tube.radius_m


    @property
    def evaluation_steps(self) -> tuple[str, ...]:
        """SR/SSR steps (tasks/centrifuge/evaluation.py), outside the content hash as for weighing."""
        from labference_ros.tasks.centrifuge.evaluation import EVALUATION_STEPS

        return EVALUATION_STEPS


_STATE_VARIABLES = ("seated", "held", "unfinished", "attempts", "first_intended_slot", "terminal_dwell_s",
                    "physically_complete", "evidence_version")
_EVIDENCE = ("camera:front", "camera:wrist", "robot_state", "public_instruction", "authorized_history")


# The hidden-event condition's event: the centrifuge's green ready lamp (beside the rotor,
# towards the front camera) lights once it may be loaded. Neither tube nor the rotor is to
# be touched before. The window opens after a system that starts at once has reached the
# free tube (the scripted expert grasps it about 4 s in), so one that does not wait shows it.
READY_LAMP = ExternalEventSpec(
    name="ready_lamp", window_s=(6.0, 12.0), affected=(*TUBES, "rotor"),
    cue="the green ready lamp beside the rotor lights (front camera)")


# The held-out tube pair (cell/centrifuge_cell.yaml binding `slim_tubes`): slimmer and longer,
# the same mass; its caps are red.
HELDOUT_BINDING = "slim_tubes"
HELDOUT_TUBE = TubeGeometry(radius_m=0.0060, length_m=0.095)


def _centrifuge(condition: str, seated: int, external_event: ExternalEventSpec | None = None,
                tube: TubeGeometry | None = None, binding: str | None = None,
                rebinds: str | None = None) -> CentrifugeContract:
    contract = CentrifugeContract(
        task=TASK, condition=condition, version="0.1.0", state_variables=_STATE_VARIABLES,
        authorized_evidence=_EVIDENCE, operation_types=("pick", "insert", "wait", "stop"),
        exposes_wait=True, exposes_stop=True, stop_requires_completion=True,
        rotor=RotorGeometry(), tube=tube or TubeGeometry(), insertion=InsertionThresholds(),
        approach=ApproachThresholds(), terminal=TerminalConditions(), opportunities=OpportunityRules(),
        diagnostics=DiagnosticInterfaces(), initially_seated=seated, external_event=external_event,
        binding=binding, rebinds=rebinds)
    if contract.clearance_m <= 0:
        raise ValueError("the tube does not fit the socket bore")
    return contract


def contract_for(condition: str) -> CentrifugeContract:
    """basic: one tube already stably seated, the second available; extended: both outside."""
    if condition == "basic":
        return _centrifuge("basic", 1)
    if condition == "extended":
        return _centrifuge("extended", 0)
    if condition == "hidden_event":  # basic, started only once the ready lamp lights (SciHorizon-eLab 4)
        return _centrifuge("hidden_event", 1, READY_LAMP)
    if condition == "heldout_tubes":  # basic's instances with the held-out tube pair
        return _centrifuge("heldout_tubes", 1, tube=HELDOUT_TUBE, binding=HELDOUT_BINDING, rebinds="basic")
    raise ValueError(f"unknown centrifuge condition {condition!r}")
