"""The centrifuge family behind the TaskFamily interface (tasks/base.py).

Everything here but build_scene is pure and works on measurements, as a real
rig's would; the scene (tasks/centrifuge/scene.py) is imported only by a
simulator backend.
"""
from __future__ import annotations

from labference_ros.tasks.base import TaskFamily, launch_seeds


class CentrifugeFamily(TaskFamily):
    name = "centrifuge_loading"
    conditions = ("basic", "extended", "hidden_event", "heldout_tubes")
    reference_systems = {
        "scripted_expert": "labference_ros.tasks.centrifuge.systems:ScriptedExpert",
        "plan_follower": "labference_ros.tasks.centrifuge.systems:PlanFollower",
        "dropper": "labference_ros.tasks.centrifuge.systems:Dropper",
        "hurried": "labference_ros.tasks.centrifuge.systems:Hurried",
        "second_guess": "labference_ros.tasks.centrifuge.systems:SecondGuess",
        "impatient_expert": "labference_ros.tasks.centrifuge.systems:ImpatientExpert",
        "opposite_from_pixels": "labference_ros.tasks.centrifuge.systems:OppositeFromPixels",
    }
    graphs = ("labference_ros.graphs.centrifuge_sim",)
    cameras = ("front", "wrist")

    def contract_for(self, condition: str):
        from labference_ros.tasks.centrifuge.contract import contract_for

        return contract_for(condition)

    def instance_from_json(self, text: str):
        from labference_ros.tasks.centrifuge.instances import CentrifugeInstance

        return CentrifugeInstance.from_json(text)

    def generate(self, condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list:
        from labference_ros.tasks.centrifuge.instances import generate

        return generate(condition, n, task_seed, layout_seed, policy_seed)

    def generate_pairs(self, condition: str, n_pairs: int, task_seed: int, layout_seed: int,
                       policy_seed: int) -> list[tuple]:
        from labference_ros.tasks.centrifuge.instances import generate_pairs

        if condition != "basic":
            raise ValueError("controlled destination pairs hold one tube seated: basic condition only")
        return generate_pairs(n_pairs, task_seed, layout_seed, policy_seed)

    @property
    def generator_version(self) -> str:
        from labference_ros.tasks.centrifuge.instances import GENERATOR_VERSION

        return GENERATOR_VERSION

    def read_instances(self, path) -> list:
        from labference_ros.tasks.centrifuge.instances import read_instance_list

        return read_instance_list(path)

    def write_instances(self, path, instances, meta: dict | None = None) -> None:
        from labference_ros.tasks.centrifuge.instances import write_instance_list

        write_instance_list(path, instances, meta)

    def make_referee(self, contract, instance, *, episode_id: str, session_id: str,
                     deadline_s: float | None = None):
        from labference_ros.tasks.centrifuge.referee import Referee

        return Referee(contract, instance, episode_id=episode_id, session_id=session_id, deadline_s=deadline_s)

    def assets(self) -> dict:
        from labference_ros.cell.assets import cell_assets
        from labference_ros.cell.description import CELL_DIR
        from labference_ros.tasks.centrifuge.instances import GENERATOR_VERSION

        return {**cell_assets(CELL_DIR / "centrifuge_cell.yaml"), "layout_revision": GENERATOR_VERSION}

    @property
    def instance_type(self) -> type:
        from labference_ros.tasks.centrifuge.instances import CentrifugeInstance

        return CentrifugeInstance

    def start_state(self, instance, operations) -> dict:
        # An insertion that succeeds seats its tube in the slot; a pick takes it out.
        from labference_ros.core.operations import INSERT, PICK
        from labference_ros.tasks.centrifuge.rotor import slot_name

        seated = {tube: slot_name(slot) for tube, slot in instance.seated.items()}
        for op in operations:
            if op.type == INSERT:
                seated[op.object] = op.destination
            elif op.type == PICK:
                seated.pop(op.object, None)
        return {"seated": dict(sorted(seated.items()))}

    def measured_start_state(self, measurement) -> dict:
        from labference_ros.tasks.centrifuge.oracle_scope import occupied_slots

        return {"seated": dict(sorted(occupied_slots(measurement.objects, self.contract_for("basic")).items()))}

    def handoff_instance(self, instance, state: dict):
        # Scored from the verified occupancy: one tube seated is a basic start, none an extended one.
        from dataclasses import replace

        from labference_ros.tasks.centrifuge.rotor import slot_index

        seated = {tube: slot_index(slot) for tube, slot in state["seated"].items()}
        if len(seated) > 1:
            raise ValueError(f"a start with {sorted(seated)} seated leaves nothing to choose")
        return replace(instance, seated=seated, condition="basic" if seated else "extended")

    def accepts_condition(self, condition: str) -> bool:
        return condition == "extended"  # the only population --new writes: its controlled pairs

    def checkpoint_starts(self, condition: str, n: int, seed: int) -> list:
        # The controlled destination pairs (paper 4.1): tube_a seated as meant or in the next slot.
        from labference_ros.tasks.centrifuge.instances import settled_start_pairs

        return settled_start_pairs(n, **launch_seeds(seed))

    def plan_operation(self, planner, arm_q, instance, measurement, operation):
        from labference_ros.core.operations import INSERT
        from labference_ros.skills.motion import PlanningError
        from labference_ros.tasks.centrifuge.moves import plan_insert
        from labference_ros.tasks.centrifuge.rotor import slot_index

        if operation.type != INSERT or operation.object not in measurement.objects:
            raise PlanningError(f"prefix operation {operation} is not an insertion of a measured tube")
        return plan_insert(planner, arm_q, instance, measurement.objects[operation.object].position,
                           slot_index(operation.destination))

    def cell_description(self):
        from labference_ros.cell.description import centrifuge_cell

        return centrifuge_cell()

    def build_scene(self, instance, fiducials: bool = False):
        from labference_ros.tasks.centrifuge.scene import sim_scene

        return sim_scene(instance, fiducials)

    def environment_profile(self, condition: str | None = None) -> dict:
        from labference_ros.tasks.indicator_lamp import lamp_event_profile

        return lamp_event_profile(self.contract_for(condition).external_event if condition in self.conditions else None)

    def make_environment(self, instance):
        # The hidden-event condition's ready lamp (None in the other conditions: nothing acts).
        from labference_ros.tasks.centrifuge.scene import READY_LAMP_GEOM, READY_ON_RGBA
        from labference_ros.tasks.indicator_lamp import lamp_environment

        return lamp_environment(instance, READY_LAMP_GEOM, READY_ON_RGBA)

    def evaluator_view(self, instance, measurement):
        # The occupancy the rotor shows now: the insertion predicate on the measured tubes.
        from labference_ros.core.system import EvaluatorView
        from labference_ros.tasks.centrifuge.oracle_scope import occupied_slots
        from labference_ros.tasks.centrifuge.rotor import slot_index

        seated = occupied_slots(measurement.objects, self.contract_for(instance.condition))
        return EvaluatorView(instance=instance, t=measurement.t,
                             positions={n: o.position for n, o in measurement.objects.items()},
                             facts={"seated": {tube: slot_index(slot) for tube, slot in seated.items()}})

    def state_payload(self, world) -> dict:
        from labference_ros.tasks.centrifuge.oracle_scope import state_payload

        return state_payload(world.measure().objects, self.contract_for(world.instance.condition))

    def decision_rule(self, legal_set):
        from labference_ros.tasks.centrifuge.oracle_scope import decision_rule

        return decision_rule(legal_set)

    def oracle_site_checks(self, contract) -> dict:
        from labference_ros.tasks.centrifuge.oracle_scope import site_checks

        return site_checks(contract)

    def geometry_frames(self, objects) -> list[dict]:
        from labference_ros.tasks.centrifuge.contract import contract_for
        from labference_ros.tasks.centrifuge.oracle_scope import geometry_frames

        return geometry_frames(objects, contract_for("basic"))  # the rotor is the same in both conditions

    def evaluation_chain(self, step_names) -> tuple:
        from labference_ros.tasks.centrifuge.evaluation import STEP_PREDICATES

        unknown = [n for n in step_names if n not in STEP_PREDICATES]
        if unknown:
            raise ValueError(f"{self.name}: unknown evaluation steps {unknown}; known: {sorted(STEP_PREDICATES)}")
        return tuple((n, STEP_PREDICATES[n]) for n in step_names)


FAMILY = CentrifugeFamily()
