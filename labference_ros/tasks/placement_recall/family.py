"""The placement-recall family behind the TaskFamily interface (tasks/base.py).

Its conditions name the setting and the caps together ("extended-same"): each is
one contract (placement_recall.<setting>-<caps>@version); heldout_tubes is basic-same
with the held-out tubes (a held-out object binding). Everything here but
build_scene and make_environment is pure and works on measurements; those two
import the simulator, and only lab_sim calls them.
"""
from __future__ import annotations

from labference_ros.tasks.base import TaskFamily, launch_seeds
from labference_ros.tasks.placement_recall.contract import HISTORY_PROTOCOL


class PlacementRecallFamily(TaskFamily):
    name = "placement_recall"
    conditions = ("basic-same", "basic-distinct", "extended-same", "extended-distinct", "heldout_tubes")
    reference_systems = {
        "scripted_expert": "labference_ros.tasks.placement_recall.systems:ScriptedExpert",
        "label_memory": "labference_ros.tasks.placement_recall.systems:LabelMemory",
        "label_memory_pixels": "labference_ros.tasks.placement_recall.systems:LabelMemoryPixels",
        "cap_colour_pixels": "labference_ros.tasks.placement_recall.systems:CapColourPixels",
        "world_position": "labference_ros.tasks.placement_recall.systems:WorldPosition",
        "dropper": "labference_ros.tasks.placement_recall.systems:Dropper",
        "second_guess": "labference_ros.tasks.placement_recall.systems:SecondGuess",
        "hurried": "labference_ros.tasks.placement_recall.systems:Hurried",
        "cap_colour": "labference_ros.tasks.placement_recall.systems:CapColour",
    }
    graphs = ("labference_ros.graphs.placement_recall_sim",)
    cameras = ("front", "wrist")
    history_protocol = HISTORY_PROTOCOL

    def contract_for(self, condition: str):
        from labference_ros.tasks.placement_recall.contract import contract_for

        return contract_for(condition)

    def instance_from_json(self, text: str):
        from labference_ros.tasks.placement_recall.instances import PlacementInstance

        return PlacementInstance.from_json(text)

    def generate(self, condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list:
        from labference_ros.tasks.placement_recall.instances import generate_condition

        return generate_condition(condition, n, task_seed, layout_seed, policy_seed)

    def accepts_condition(self, condition: str) -> bool:
        from labference_ros.tasks.placement_recall.instances import BINDING_CONDITIONS, split_condition

        # A held-out binding's condition by its name; the others with their caps (a bare setting: same caps).
        return condition in BINDING_CONDITIONS or "-".join(split_condition(condition)) in self.conditions

    def checkpoint_starts(self, condition: str, n: int, seed: int) -> list:
        # n balanced blocks: the target placed in every hole under every rack movement.
        from labference_ros.core.operations import insert
        from labference_ros.tasks.placement_recall.instances import (BINDING_CONDITIONS, TARGET, checkpoint_starts,
                                                                     split_condition)

        if condition in BINDING_CONDITIONS:
            raise ValueError(f"placement recall's checkpoints do not offer the held-out binding condition {condition}")
        setting, caps = split_condition(condition)
        return [(f"{inst.instance_id}:p1", inst, (insert(TARGET, hole),), None)
                for inst, hole in checkpoint_starts(setting, caps, **launch_seeds(seed), blocks=n)]

    @property
    def generator_version(self) -> str:
        from labference_ros.tasks.placement_recall.instances import GENERATOR_VERSION

        return GENERATOR_VERSION

    def read_instances(self, path) -> list:
        from labference_ros.tasks.placement_recall.instances import read_instance_list

        return read_instance_list(path)

    def write_instances(self, path, instances, meta: dict | None = None) -> None:
        from labference_ros.tasks.placement_recall.instances import write_instance_list

        write_instance_list(path, instances, meta)

    def make_referee(self, contract, instance, *, episode_id: str, session_id: str,
                     deadline_s: float | None = None):
        from labference_ros.tasks.placement_recall.referee import Referee

        return Referee(contract, instance, episode_id=episode_id, session_id=session_id, deadline_s=deadline_s)

    def assets(self) -> dict:
        from labference_ros.cell.assets import cell_assets
        from labference_ros.cell.description import CELL_DIR
        from labference_ros.tasks.placement_recall.instances import GENERATOR_VERSION

        return {**cell_assets(CELL_DIR / "placement_cell.yaml"), "layout_revision": GENERATOR_VERSION}

    @property
    def instance_type(self) -> type:
        from labference_ros.tasks.placement_recall.instances import PlacementInstance

        return PlacementInstance

    # Checkpoints (oracle/checkpoints.py): a start places the target in a hole with the
    # reference planner and hands off before the occluded transition, which then runs in
    # every branch (the placement history is the start's, the recall the system's).
    def start_state(self, instance, operations) -> dict:
        from labference_ros.core.operations import INSERT

        in_holes = dict(instance.distractors)
        for op in operations:
            if op.type != INSERT:
                raise ValueError(f"placement recall's starts insert the target into a hole, not {op}")
            in_holes[op.object] = op.destination
        return {"in_holes": dict(sorted(in_holes.items()))}

    def measured_start_state(self, measurement) -> dict:
        from labference_ros.tasks.placement_recall.instances import RACK_CENTER
        from labference_ros.tasks.placement_recall.rack import RackPose
        from labference_ros.tasks.placement_recall.recognisers import rack_pose, seated_holes

        pose = rack_pose(measurement, RackPose(RACK_CENTER, 0.0))  # the rack is measured; this never serves
        tubes = sorted(n for n, o in measurement.objects.items() if o.kind == "tube")
        return {"in_holes": seated_holes(measurement, pose, self.contract_for("basic"), tubes)}

    def handoff_instance(self, instance, state: dict):
        from dataclasses import replace

        from labference_ros.tasks.placement_recall.contract import contract_for

        # The target in a hole: the referee starts after the placement; else (a start at the
        # reset) the episode's own beginning.
        hole = state.get("in_holes", {}).get(contract_for(instance.condition).target)
        return instance if hole is None else replace(instance, placed_hole=hole)

    def checkpoint_opportunity(self, opportunities):
        # From a placed start the first opportunity is Wait (before the occlusion); the
        # choice the population is about is the retrieval's.
        from labference_ros.core.operations import PICK

        return next((o for o in opportunities if any(op.type == PICK for op in o.legal_set)), None)

    def plan_operation(self, planner, arm_q, instance, measurement, operation):
        from labference_ros.core.action_spec import reference_joint_spec
        from labference_ros.core.operations import INSERT
        from labference_ros.skills.motion import PlanningError, tube_open_width
        from labference_ros.tasks.placement_recall.rack import LABELS, hole_positions
        from labference_ros.tasks.placement_recall.recognisers import rack_pose
        from labference_ros.tasks.placement_recall.systems import plan_tube_insert

        if operation.type != INSERT or operation.object not in measurement.objects or \
                operation.destination not in LABELS:
            raise PlanningError(f"prefix operation {operation} is not an insertion of a measured tube into a hole")
        contract = self.contract_for(instance.condition)  # its tube: the instance's binding's
        mouth = hole_positions(contract.rack, rack_pose(measurement, instance.rack_pose))[operation.destination]
        return plan_tube_insert(planner, arm_q, measurement.objects[operation.object].position, mouth,
                                tube_open_width(reference_joint_spec().gripper), tube=contract.tube)

    def cell_description(self):
        from labference_ros.cell.description import placement_cell

        return placement_cell()

    def build_scene(self, instance, fiducials: bool = False):
        from labference_ros.tasks.placement_recall.scene import sim_scene

        if fiducials:
            raise ValueError("placement recall has no rehearsal scene (fiducial markers) yet")
        return sim_scene(instance)

    def make_environment(self, instance):
        from labference_ros.tasks.placement_recall.environment import PlacementEnvironment

        return PlacementEnvironment(instance, self.contract_for(instance.condition))

    def environment_profile(self, condition: str | None = None) -> dict:
        from labference_ros.tasks.placement_recall.environment import OCCLUSION

        return dict(OCCLUSION)

    def evaluator_view(self, instance, measurement):
        # What the rack shows now: its measured pose and the tubes standing in its holes.
        from labference_ros.core.system import EvaluatorView
        from labference_ros.tasks.placement_recall.recognisers import rack_pose, seated_holes

        pose = rack_pose(measurement, instance.rack_pose)
        seated = seated_holes(measurement, pose, self.contract_for(instance.condition), instance.tubes)
        return EvaluatorView(instance=instance, t=measurement.t,
                             positions={n: o.position for n, o in measurement.objects.items()},
                             facts={"rack_pose": [*pose.center, pose.yaw_rad], "in_holes": seated})

    # Oracle sites (oracle_scope.py): state and decision, no geometry or skill site.
    def state_payload(self, world) -> dict:
        from labference_ros.tasks.placement_recall.oracle_scope import state_payload

        return state_payload(world.measure(), world.instance, self.contract_for(world.instance.condition))

    def decision_rule(self, legal_set):
        from labference_ros.tasks.placement_recall.oracle_scope import decision_rule

        return decision_rule(legal_set)

    def oracle_site_checks(self, contract) -> dict:
        from labference_ros.tasks.placement_recall.oracle_scope import site_checks

        return site_checks(contract)

    def report_lines(self, scores: list[dict]) -> dict[str, str]:
        from labference_ros.tasks.placement_recall.evaluation import report_lines

        return report_lines(scores)

    def evaluation_chain(self, step_names) -> tuple:
        from labference_ros.tasks.placement_recall.evaluation import STEP_PREDICATES

        unknown = [n for n in step_names if n not in STEP_PREDICATES]
        if unknown:
            raise ValueError(f"{self.name}: unknown evaluation steps {unknown}; known: {sorted(STEP_PREDICATES)}")
        return tuple((n, STEP_PREDICATES[n]) for n in step_names)


FAMILY = PlacementRecallFamily()
