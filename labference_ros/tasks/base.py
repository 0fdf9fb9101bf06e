"""The interface between a task family and the rest of the system.

A task family (paper section 4: centrifuge loading, feedback weighing,
placement recall) is a package under ``labference_ros.tasks`` that exposes one
``TaskFamily`` object named ``FAMILY``. It owns everything that depends on the
task: its contracts, its resolved instances and their generator, its state
update F and legal set U, its recognisers and physical predicates (inside its
referee), the simulator scene, its reference systems and what each Oracle
site may deliver. The shared layers (episode runner, referee node, replay
audit, Oracle, campaigns, reports) reach a family only through this interface,
looked up by the contract's task name (``labference_ros.tasks.family``), so a
new family touches no shared file except the registry entry.

The interface serves simulation and a real rig alike: nothing here needs a
simulator except ``build_scene``, which only a simulator backend calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Instance(Protocol):
    """A resolved instance: what the evaluator fixes before an episode."""

    instance_id: str
    condition: str
    task_seed: int
    layout_seed: int
    policy_seed: int

    def to_json(self) -> str: ...

    @property
    def layout_hash(self) -> str: ...

    def public_instruction(self) -> str: ...


class EpisodeReferee(Protocol):
    """The physical-event scorer of one episode (pure: no clock, no randomness).
    The online referee node, the replay audit and the Oracle's continuations
    all drive it through these calls, in sim-time order."""

    def step(self, measurement: Any) -> list[dict]: ...

    def deliver_observation(self, observation_id: str, t: float, session_id: str | None = None) -> list[dict]: ...

    def report_operation(self, operation: Any, t: float, opportunity_id: int | None = None,
                         evidence_version: int | None = None, source: str = "") -> list[dict]: ...

    def check_intervention(self, intervention: dict, t: float) -> list[dict]: ...

    def finish(self, t: float, reason: str = "episode_end") -> list[dict]: ...

    def scores(self, t: float | None = None) -> dict: ...


@dataclass(frozen=True)
class SimScene:
    """A family's scene as a simulator backend needs it (TaskFamily.build_scene)."""

    spec: Any  # mujoco.MjSpec, not compiled
    objects: dict[str, str]  # measured bodies: name -> kind ("standard", "sample", "tube", "rotor")
    cameras: tuple[str, ...]  # the cameras it renders (the family's registered ones, and any marker camera)
    # Bodies of fixtures that are not measured objects: name -> contact identity (core.measurements).
    fixtures: dict[str, str] = field(default_factory=dict)
    load_cell_site: str = ""  # a force/torque-sensed site the balance reads ("": no balance in the scene)


class TaskFamily:
    """One task family. Subclasses set the class attributes and implement the
    methods; defaults raise so a missing piece fails loudly, never silently."""

    name: str = ""  # the contracts' task name, e.g. "feedback_weighing"
    conditions: tuple[str, ...] = ()
    # Tested systems this family ships (registry name -> "module:Class"), e.g. its
    # privileged scripted expert and its diagnostic reference systems.
    reference_systems: dict[str, str] = {}
    # Modules of the graph descriptions that run this family (each exposes GRAPH).
    graphs: tuple[str, ...] = ()
    # The cameras a tested system sees (its contract's authorized camera evidence), in order.
    cameras: tuple[str, ...] = ()
    # Its measurements pair with balance readings (/balance/reading), as weighing's do.
    reads_balance: bool = False
    # How its evidence reaches a tested system (run.json observation.history_protocol, with
    # the bridge's own-steps history): each observation once at its handoff; placement
    # recall's online_once adds that only fresh images follow an occlusion.
    history_protocol: str = "single_delivery"

    def contract_for(self, condition: str):
        raise NotImplementedError

    def instance_from_json(self, text: str) -> Instance:
        raise NotImplementedError

    def generate(self, condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list:
        """n instances over balanced strata (separate task, layout and policy seeds)."""
        raise NotImplementedError

    # Version of the instance generator (campaign locks record it).
    generator_version: str = ""

    def generate_pairs(self, condition: str, n_pairs: int, task_seed: int, layout_seed: int,
                       policy_seed: int) -> list[tuple]:
        """Answer-changing pairs: same layout draw, disjoint legal sets at the scored choice."""
        raise NotImplementedError

    def read_instances(self, path) -> list:
        """An instance-list file (as written by write_instances) back as instances."""
        raise NotImplementedError

    def write_instances(self, path, instances, meta: dict | None = None) -> None:
        raise NotImplementedError

    def make_referee(self, contract, instance: Instance, *, episode_id: str, session_id: str,
                     deadline_s: float | None = None) -> EpisodeReferee:
        raise NotImplementedError

    def assets(self) -> dict:
        """run.json's assets section: the revision of the files its scenes are built
        from and the layout generator's revision (cell/assets.py)."""
        raise NotImplementedError

    def build_scene(self, instance: Instance, fiducials: bool = False) -> SimScene:
        """The simulator scene for an instance; imports the simulator lazily so the
        rest of the family never needs it. fiducials: the rehearsal's scene (markers
        and the marker camera), where the family has one."""
        raise NotImplementedError

    @property
    def instance_type(self) -> type:
        """The class of this family's resolved instances."""
        raise NotImplementedError

    # Oracle checkpoints (paper 6.1): a registered start is an instance and an operation
    # prefix carried out from it, verified at the handoff against the state the family
    # expects; branches are scored from that state (oracle/checkpoints.py).
    def start_state(self, instance: Instance, operations) -> dict:
        """The task state a start should show once `operations` (core.operations.Operation,
        carried out in order) have succeeded from the instance's initialization."""
        raise NotImplementedError

    def measured_start_state(self, measurement) -> dict:
        """The same state as measured (compared with start_state at the handoff)."""
        raise NotImplementedError

    def handoff_instance(self, instance: Instance, state: dict) -> Instance:
        """The instance a branch's referee starts from: initialized as the verified state."""
        raise NotImplementedError

    def plan_operation(self, planner, arm_q, instance: Instance, measurement, operation):
        """The reference motion (skills.motion.MotionPlan) that carries out one prefix
        operation from the measured state; skills.motion.PlanningError if it cannot."""
        raise NotImplementedError

    def cell_description(self):
        """The cell the family's scenes are built in (cell.description.CellDescription):
        the robot, the table, the camera mounts, the object shapes."""
        raise NotImplementedError

    def make_environment(self, instance: Instance):
        """The simulated environment's own behaviour in an episode of `instance`, or None
        (the default: the scene only responds to the robot). lab_sim calls its
        ``update(measurement, model, data)`` at every camera tick (a dict it returns
        travels with the state published next as WorldMeasurement.environment) and
        renders blanked frames while ``occluded(t)``."""
        return None

    def environment_profile(self, condition: str | None = None) -> dict:
        """run.json's `observation.environment`: what the environment does on its own in an
        episode of `condition` (placement recall's occluder and its trigger; a hidden-event
        condition's lamp); None: what it does in every condition. Default: nothing."""
        return {}

    def report_lines(self, scores: list[dict]) -> dict[str, str]:
        """`labference report`'s family-specific lines for one cell: label -> text, from
        the episodes' scores.json. Default: none."""
        return {}

    def support_labels(self, measurement) -> dict[str, str]:
        """object -> what supports it, as people and RViz read it (the world state's
        supported_by); the referee judges support from contacts itself. Default: none."""
        return {}

    def sensor_estimator(self, instance: Instance, params=None):
        """A real cell's stand-in for the simulator's world measurements: an object
        with ``estimate(frame) -> measurement`` over sensor frames (markers, fingertips,
        gripper, instruments), whose tracks start where the instance sets objects up
        (``initial_positions``) and whose ``params.marker_timeout_s`` says how long
        an unseen marker is still trusted. params: the family's estimator parameters
        (None: its defaults)."""
        raise NotImplementedError

    def estimator_parameters(self, **overrides):
        """The parameters of its sensor estimator: its defaults with `overrides` (e.g.
        marker_timeout_s, which every family's parameters carry)."""
        raise NotImplementedError

    def evaluator_view(self, instance: Instance, measurement):
        """What a privileged tested system may read at one measurement (core.system.EvaluatorView)."""
        raise NotImplementedError

    def state_payload(self, world) -> dict:
        """Oracle state site: the decision-relevant observable state, as seen."""
        raise NotImplementedError

    def accepts_condition(self, condition: str) -> bool:
        """`diagnose-oracle --new` can write a population of `condition` (as a user may type it)."""
        return condition in self.conditions

    def checkpoint_starts(self, condition: str, n: int, seed: int) -> list | None:
        """The registered starts of a population `diagnose-oracle --new n` writes, where the
        family registers its own (controlled pairs, balanced blocks): one
        (checkpoint_id, instance, prefix operations, executed operations or None) per start,
        with the seeds `seed` stands for (launch_seeds). None (the default): n generated instances of `condition`,
        each a start from its initialization, shaped by --prefix and --fixed-subgoal."""
        return None

    def checkpoint_opportunity(self, opportunities):
        """The opportunity a checkpoint continuation is scored at (its first choice, the
        population J's member): the first one opened from the handoff by default."""
        return opportunities[0] if opportunities else None

    def decision_rule(self, legal_set):
        """Oracle decision site: the one legal operation a Replace supplies."""
        raise NotImplementedError

    def oracle_site_checks(self, contract) -> dict:
        """What this family's payloads may say beyond their declared keys: site ->
        check(payload) -> reasons, run by the shared scope check (core.oracle_scope)
        after the binding, hidden and undeclared fields. Default: none."""
        return {}

    def geometry_frames(self, objects) -> list[dict]:
        """Oracle geometry site: the frames a geometry report may name."""
        raise NotImplementedError

    # Certification before inclusion (SciHorizon-eLab 3.4, eq. 5; campaign.certify): the
    # reference program (a reference_systems name) that must solve every generated
    # instance in one in-process episode before a population is fixed.
    reference_program: str = "scripted_expert"

    def certification_steps(self, condition: str) -> tuple:
        """The ordered step predicates a certified instance's reference episode satisfies:
        ((name, predicate on scores.json), ...). Default: the contract's SR/SSR chain."""
        return self.evaluation_chain(self.contract_for(condition).evaluation_steps)

    def evaluation_chain(self, step_names) -> tuple:
        """SR/SSR: ((name, predicate on scores.json), ...) for the step names a
        contract declares (TaskContract.evaluation_steps, run.json
        task.evaluation_steps), in order. An unknown name raises ValueError."""
        raise NotImplementedError


def launch_seeds(seed: int) -> dict[str, int]:
    """The instance seeds one launch argument `seed` stands for: task state, layout and policy
    (kept apart in each instance, as the paper keeps them). The graph's episodes, the Oracle's
    checkpoint populations and `diagnose-oracle --new` derive them here, so one seed gives the
    same instances everywhere."""
    return {"task_seed": seed, "layout_seed": seed, "policy_seed": seed}
