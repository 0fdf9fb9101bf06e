"""Feedback weighing (paper 4.2): bring the balance reading to a target by
adding and removing labelled standards; the next operation depends on the
reading the last one produced.

Inner shape (every task family has the same one):
  objects.py        object identities (standards, sample)
  contract.py       versioned, hashed task contracts (basic, extended)
  instance.py       the resolved instance; instances.py its generator (strata, pairs)
  layout.py         nuisance placement from the layout seed
  task_state.py     task state z_t, the update F and the legal set U
  recognisers.py    behaviour recognisers and physical confirmation predicates
  referee.py        the episode scorer: recognisers + F + U + opportunities + scoring
  oracle_scope.py   what each Oracle site may deliver for this family
  scene.py          the MuJoCo scene builder (simulator only)
  systems/          reference tested systems (scripted expert, pixel readers, diagnostics)
"""
from __future__ import annotations

from labference_ros.tasks.base import TaskFamily


class WeighingFamily(TaskFamily):
    name = "feedback_weighing"
    conditions = ("basic", "extended", "hidden_event", "heldout_blocks")
    reference_systems = {
        "scripted_expert": "labference_ros.tasks.weighing.systems.scripted:ScriptedExpert",
        "display_reader": "labference_ros.tasks.weighing.systems.scripted:DisplayReader",
        "fixed_preference": "labference_ros.tasks.weighing.systems.scripted:FixedPreference",
        "misreader": "labference_ros.tasks.weighing.systems.diagnostic:Misreader",
        "mislocator": "labference_ros.tasks.weighing.systems.diagnostic:Mislocator",
        "unsteady_grasp": "labference_ros.tasks.weighing.systems.diagnostic:UnsteadyGrasp",
        "dropping_expert": "labference_ros.tasks.weighing.systems.imperfect:DroppingExpert",
        "hurried_expert": "labference_ros.tasks.weighing.systems.imperfect:HurriedExpert",
        "impatient_expert": "labference_ros.tasks.weighing.systems.imperfect:ImpatientExpert",
        "wrong_first_expert": "labference_ros.tasks.weighing.systems.imperfect:WrongFirstExpert",
    }
    graphs = ("labference_ros.graphs.weighing_sim", "labference_ros.graphs.weighing_real",
              "labference_ros.graphs.weighing_rehearsal", "labference_ros.graphs.weighing_external",
              "labference_ros.graphs.weighing_isaac")
    cameras = ("front", "wrist", "display")
    reads_balance = True

    def contract_for(self, condition: str):
        from labference_ros.tasks.weighing.contract import contract_for

        return contract_for(condition)

    def instance_from_json(self, text: str):
        from labference_ros.tasks.weighing.instance import WeighingInstance

        return WeighingInstance.from_json(text)

    def generate(self, condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list:
        from labference_ros.tasks.weighing.instances import generate

        return generate(condition, n, task_seed, layout_seed, policy_seed)

    def generate_pairs(self, condition: str, n_pairs: int, task_seed: int, layout_seed: int,
                       policy_seed: int) -> list[tuple]:
        from labference_ros.tasks.weighing.instances import generate_pairs

        return generate_pairs(condition, n_pairs, task_seed, layout_seed, policy_seed)

    @property
    def generator_version(self) -> str:
        from labference_ros.tasks.weighing.instances import GENERATOR_VERSION

        return GENERATOR_VERSION

    def read_instances(self, path) -> list:
        from labference_ros.tasks.weighing.instances import read_instance_list

        return read_instance_list(path)

    def write_instances(self, path, instances, meta: dict | None = None) -> None:
        from labference_ros.tasks.weighing.instances import write_instance_list

        write_instance_list(path, instances, meta)

    def make_referee(self, contract, instance, *, episode_id: str, session_id: str,
                     deadline_s: float | None = None):
        from labference_ros.tasks.weighing.referee import Referee

        return Referee(contract, instance, episode_id=episode_id, session_id=session_id, deadline_s=deadline_s)

    def assets(self) -> dict:
        from labference_ros.cell.assets import cell_assets
        from labference_ros.cell.description import CELL_DIR
        from labference_ros.tasks.weighing.layout import LAYOUT_VERSION

        return {**cell_assets(CELL_DIR / "weighing_cell.yaml"), "layout_revision": LAYOUT_VERSION}

    def build_scene(self, instance, fiducials: bool = False):
        from labference_ros.tasks.weighing.scene import sim_scene

        return sim_scene(instance, fiducials)

    @property
    def instance_type(self) -> type:
        from labference_ros.tasks.weighing.instance import WeighingInstance

        return WeighingInstance

    def start_state(self, instance, operations) -> dict:
        from labference_ros.core.measurements import PAN

        on = set(instance.initial_on_pan)
        for op in operations:
            (on.add if op.destination == PAN else on.discard)(op.object)
        return {"on_pan": sorted(on)}

    def measured_start_state(self, measurement) -> dict:
        from labference_ros.core.measurements import PAN
        from labference_ros.tasks.weighing.objects import STANDARDS

        return {"on_pan": sorted(n for n, o in measurement.objects.items() if n in STANDARDS and PAN in o.contacts)}

    def handoff_instance(self, instance, state: dict):
        from dataclasses import replace

        return replace(instance, initial_on_pan=tuple(sorted(state["on_pan"])))

    def plan_operation(self, planner, arm_q, instance, measurement, operation):
        from labference_ros.core.measurements import PAN
        from labference_ros.skills.motion import PlanningError
        from labference_ros.tasks.weighing.moves import plan_to_pan, plan_to_table

        if operation.object not in measurement.objects:
            raise PlanningError(f"prefix operation {operation} is infeasible")
        xyz = measurement.objects[operation.object].position
        if operation.destination == PAN:
            return plan_to_pan(planner, arm_q, operation.object, xyz, instance.layout["balance"], instance.binding)
        return plan_to_table(planner, arm_q, operation.object, xyz, instance.layout[operation.object],
                             instance.binding)

    def cell_description(self):
        from labference_ros.cell.description import weighing_cell

        return weighing_cell()

    def environment_profile(self, condition: str | None = None) -> dict:
        from labference_ros.tasks.indicator_lamp import lamp_event_profile

        return lamp_event_profile(self.contract_for(condition).external_event if condition in self.conditions else None)

    def make_environment(self, instance):
        # The hidden-event condition's ready lamp (None in the other conditions: nothing acts).
        from labference_ros.cell.display_layout import READY_ON_RGBA
        from labference_ros.tasks.indicator_lamp import lamp_environment
        from labference_ros.tasks.weighing.scene import READY_LAMP_GEOM

        return lamp_environment(instance, READY_LAMP_GEOM, READY_ON_RGBA)

    def support_labels(self, measurement) -> dict[str, str]:
        from labference_ros.tasks.weighing.recognisers import support_classes

        return support_classes(measurement)

    def sensor_estimator(self, instance, params=None):
        from labference_ros.tasks.weighing.sensor_estimator import SensorWorldEstimator

        return SensorWorldEstimator.for_instance(instance, params)

    def estimator_parameters(self, **overrides):
        from labference_ros.tasks.weighing.sensor_estimator import EstimatorParameters

        return EstimatorParameters(**overrides)

    def evaluator_view(self, instance, measurement):
        # Support as the referee and lab_sim classify it (contacts, stacks, the rim), not raw contacts.
        from labference_ros.core.system import EvaluatorView
        from labference_ros.tasks.weighing.recognisers import S_PAN, support_classes

        on_pan = frozenset(n for n, c in support_classes(measurement).items() if c == S_PAN)
        return EvaluatorView(instance=instance, t=measurement.t, on_pan=on_pan,
                             positions={n: o.position for n, o in measurement.objects.items()})

    def state_payload(self, world) -> dict:
        # What the display shows now: displayed load and stability indicator.
        r = world.reading
        return {"displayed_g": float(r.displayed_g), "stable": bool(r.stable)}

    def decision_rule(self, legal_set):
        # Registered selection rule: the first physical legal operation in
        # canonical order, else the first legal one (Wait/Stop).
        ops = sorted(legal_set)
        physical = [o for o in ops if o.physical]
        return (physical or ops or [None])[0]

    def oracle_site_checks(self, contract) -> dict:
        from labference_ros.tasks.weighing.oracle_scope import site_checks

        return site_checks(contract)

    def geometry_frames(self, objects) -> list[dict]:
        from labference_ros.core.geometry import standard_frames

        return standard_frames(objects)

    def evaluation_chain(self, step_names) -> tuple:
        from labference_ros.tasks.weighing.evaluation import STEP_PREDICATES

        unknown = [n for n in step_names if n not in STEP_PREDICATES]
        if unknown:
            raise ValueError(f"{self.name}: unknown evaluation steps {unknown}; known: {sorted(STEP_PREDICATES)}")
        return tuple((n, STEP_PREDICATES[n]) for n in step_names)


FAMILY = WeighingFamily()
