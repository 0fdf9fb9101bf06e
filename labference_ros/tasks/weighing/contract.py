"""TaskContract: the six elements of paper 3.2 for feedback weighing.

A contract is plain, frozen data. Every threshold the paper leaves open is
declared here, versioned, and covered by the content hash, so a run record
(run.json) names exactly which rules scored it. Change a number -> bump the
version; the hash changes on its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.core.contracts import HashedContract
from labference_ros.core.external_events import ExternalEventSpec
from labference_ros.core.measurements import PAN
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G


@dataclass(frozen=True)
class RecogniserThresholds:
    """Behaviour recognisers (paper 5.3). Deliberately looser than the
    confirmation predicates: a choice is identified early, success is judged
    strictly and separately."""

    grasp_hold_s: float = 0.10  # bilateral contact + closing held this long = a grasp choice
    release_hold_s: float = 0.10  # no robot contact this long after a grasp = a release
    low_motion_linear_mps: float = 0.02  # "placed" recognised below these speeds
    low_motion_angular_rps: float = 0.30


@dataclass(frozen=True)
class ConfirmationThresholds:
    """Physical confirmation of a support change (obligation / execution)."""

    dwell_s: float = 0.50  # released, still and on the same support this long
    linear_mps: float = 0.005
    angular_rps: float = 0.05
    require_stable_reading: bool = True  # the balance must show a stable, eligible reading
    # A confirmed arrangement whose stable reading disagrees with sample + standards
    # by more than this is flagged (validity event), e.g. partial load on the rim.
    reading_consistency_g: float = 2.0


@dataclass(frozen=True)
class TerminalConditions:
    """Final completion (paper 4.2, 7.2, 8.2)."""

    reading_tolerance_g: float = 1.0
    dwell_s: float = 3.0  # continuous; restarts when any requirement fails
    linear_mps: float = 0.005
    angular_rps: float = 0.05
    require_stable_indicator: bool = True
    require_exact_standard_set: bool = True
    require_sample_on_pan: bool = True
    require_release: bool = True  # no hand on the pan, no robot contact with the load
    # Release and low motion are required of the pan load, W* and the sample
    # (not of standards resting elsewhere on the table).
    motion_scope: str = "pan_load_goal_and_sample"


@dataclass(frozen=True)
class OpportunityRules:
    """When a decision becomes scorable (paper 5.3)."""

    response_window_s: float = 60.0  # sim seconds from delivery; no choice by then = unidentified
    triggers: tuple[str, ...] = ("initial_readiness", "confirmed_change", "failed_attempt")


@dataclass(frozen=True)
class DiagnosticInterfaces:
    """Supported Oracle sites and what each may carry (paper 6, Table 2)."""

    sites: tuple[str, ...] = ("state", "decision", "geometry", "skill")
    state_payload_keys: tuple[str, ...] = ("displayed_g", "stable", "standards_on_pan")
    decision_payload_keys: tuple[str, ...] = ("operation",)
    # One frame (object, position, directed axis) or, for Assist, all candidate frames.
    geometry_payload_keys: tuple[str, ...] = ("object", "position", "axis", "orientation", "frame", "candidates")
    skill_payload_keys: tuple[str, ...] = ("operation",)
    # Evaluator-only facts no payload may ever carry.
    hidden_keys: tuple[str, ...] = (
        "sample_mass_g", "sample_mass", "goal_set", "w_star", "required_standard",
        "required_standards", "legal_set", "legal_operations", "state_json", "reference_state",
    )


@dataclass(frozen=True)
class TaskContract(HashedContract):
    task: str
    condition: str  # "basic" | "extended" | "hidden_event" | "heldout_blocks"
    version: str
    # 1. decision-relevant state (names of the fields of z_t, see task_state.TaskState)
    state_variables: tuple[str, ...]
    # 2. authorized evidence: the policy observation channels and history
    authorized_evidence: tuple[str, ...]
    # 3. legal operations
    operation_types: tuple[str, ...]
    exposes_wait: bool
    exposes_stop: bool
    # Stop is legal only once the terminal window completed; until then Wait is
    # the legal choice while the reading is unready or the goal set is waiting out its window.
    stop_requires_completion: bool
    # 4. physical confirmation predicates
    recognisers: RecogniserThresholds
    confirmation: ConfirmationThresholds
    # 5. waiting and terminal conditions
    terminal: TerminalConditions
    opportunities: OpportunityRules
    # 6. supported diagnostic interfaces
    diagnostics: DiagnosticInterfaces
    # generation rules (instances are checked against these)
    standards_g: dict[str, int] = field(default_factory=lambda: dict(STANDARD_MASSES_G))
    targets_g: tuple[int, ...] = ()
    goal_size: tuple[int, int] = (1, 1)  # inclusive range of |W*|
    min_start_goal_edits: int = 1  # |W_0 symmetric-difference W*|
    min_sample_g: float = 20.0
    # Irreversible violations: completion stays invalid even if restored.
    irreversible_violations: tuple[str, ...] = ("sample_displaced", "overload")
    # An external event at a hidden time (core.external_events): until it happens the
    # legal set is Wait and touching an affected object is a premature interaction.
    external_event: ExternalEventSpec | None = None
    # A held-out object binding (cell description `bindings`): the cell's objects this
    # condition's scenes hold instead of the default ones (None: the default objects), and
    # the condition whose instances it rebinds: the same draws from the same seeds, each
    # instance the twin of that condition's one (its `binding_twin`). The success
    # specification is that condition's.
    binding: str | None = None
    rebinds: str | None = None


    @property
    def evaluation_steps(self) -> tuple[str, ...]:
        """The ordered steps of SR and SSR (SciHorizon eqs. 6-7) for this task; the
        family tests each on scores.json (tasks/weighing/evaluation.py). They summarise scored episodes and
        score nothing themselves, so they stay outside the content hash; run.json
        records them beside it (task.evaluation_steps)."""
        return WEIGHING_EVALUATION_STEPS


# Feedback weighing's ordered evaluation steps. A step counts only once every
# earlier step held (prefix chain), so SR is the last step.
WEIGHING_EVALUATION_STEPS = (
    "reading_ready",             # an opportunity was delivered on a ready (stable) reading
    "required_standard_chosen",  # the first native choice is in its legal set
    "transferred",               # that choice's physical subgoal was confirmed (executed)
    "terminal_dwell_complete",   # the terminal predicate held for the registered dwell
)

_STATE_VARIABLES = (
    "locations", "supported_standards", "sample_on_pan", "reading_ready",
    "last_stable_reading_g", "obligations", "attempts", "terminal_dwell_s",
    "physically_complete", "evidence_version",
)
_EVIDENCE = (
    "camera:front", "camera:wrist", "camera:display", "robot_state",
    "public_instruction", "authorized_history",
)


# The hidden-event condition's event: a second operator readies the balance, and its blue
# ready lamp (right of the display, below the stability light) lights. The standards, the
# sample and the pan are not to be touched before. The window opens after a system that
# starts at once has reached its first standard (the scripted expert grasps about 5 s in),
# so a system that does not wait shows it.
READY_LAMP = ExternalEventSpec(
    name="ready_lamp", window_s=(6.0, 12.0),
    affected=(*STANDARD_MASSES_G, "sample", PAN),
    cue="the blue ready lamp on the balance display lights (display camera)")


def _weighing(condition: str, targets: tuple[int, ...], goal_size: tuple[int, int], min_edits: int,
              external_event: ExternalEventSpec | None = None, binding: str | None = None,
              rebinds: str | None = None) -> TaskContract:
    return TaskContract(
        task="feedback_weighing",
        condition=condition,
        version="1.1.0",
        state_variables=_STATE_VARIABLES,
        authorized_evidence=_EVIDENCE,
        operation_types=("add", "remove", "wait", "stop"),
        exposes_wait=True,
        exposes_stop=True,
        stop_requires_completion=True,
        recognisers=RecogniserThresholds(),
        confirmation=ConfirmationThresholds(),
        terminal=TerminalConditions(),
        opportunities=OpportunityRules(),
        diagnostics=DiagnosticInterfaces(),
        targets_g=targets,
        goal_size=goal_size,
        min_start_goal_edits=min_edits,
        external_event=external_event,
        binding=binding,
        rebinds=rebinds,
    )


def weighing_basic() -> TaskContract:
    """All standards start on the table; exactly one standard completes the target."""
    return _weighing("basic", (160, 180, 200), (1, 1), 1)


def weighing_extended() -> TaskContract:
    """A subset starts on the pan; W* has 2-3 standards; >= 2 edits from start."""
    return _weighing("extended", (200, 220, 240), (2, 3), 2)


def weighing_hidden_event() -> TaskContract:
    """Basic weighing that starts only once the balance's ready lamp lights, at a time
    drawn from READY_LAMP's window with the instance's task seed (SciHorizon-eLab 4)."""
    return _weighing("hidden_event", (160, 180, 200), (1, 1), 1, READY_LAMP)


# The held-out binding of the standards (cell/weighing_cell.yaml `bindings`): square blocks
# of the same masses, labels and markers.
HELDOUT_BINDING = "blocks"


def weighing_heldout_blocks() -> TaskContract:
    """Basic weighing with the held-out standards: the basic instances (same seeds, same
    targets, layouts and answers) with the standards bound to HELDOUT_BINDING's blocks."""
    return _weighing("heldout_blocks", (160, 180, 200), (1, 1), 1, binding=HELDOUT_BINDING, rebinds="basic")


def contract_for(condition: str) -> TaskContract:
    if condition == "basic":
        return weighing_basic()
    if condition == "extended":
        return weighing_extended()
    if condition == "hidden_event":
        return weighing_hidden_event()
    if condition == "heldout_blocks":
        return weighing_heldout_blocks()
    raise ValueError(f"unknown weighing condition {condition!r}")
