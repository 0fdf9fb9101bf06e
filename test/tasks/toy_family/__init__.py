"""A toy task family outside the project, as a user adds one: this folder alone,
registered through LABFERENCE_TASKS (labference_ros.tasks). One puck, two pads; the
instruction names the pad the puck goes to, and the puck resting on it completes the
task. test_toy_family_plugin.py runs it through the registries, one graph episode and
one matched continuation without a file outside this folder changed."""
from __future__ import annotations

from labference_ros.tasks.base import TaskFamily

TASK = "toy_shuttle"


class ToyFamily(TaskFamily):
    name = TASK
    conditions = ("basic",)
    reference_systems = {"toy_expert": "toy_family.systems:ToyExpert"}
    graphs = ("toy_family.graph",)
    cameras = ("front", "wrist")

    def contract_for(self, condition: str):
        from toy_family.contract import contract_for

        return contract_for(condition)

    def instance_from_json(self, text: str):
        from toy_family.instances import ToyInstance

        return ToyInstance.from_json(text)

    @property
    def instance_type(self) -> type:
        from toy_family.instances import ToyInstance

        return ToyInstance

    def generate(self, condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list:
        from toy_family.instances import generate

        return generate(condition, n, task_seed, layout_seed, policy_seed)

    @property
    def generator_version(self) -> str:
        from toy_family.instances import GENERATOR_VERSION

        return GENERATOR_VERSION

    def read_instances(self, path) -> list:
        from labference_ros.core import instance_lists
        from toy_family.instances import ToyInstance

        return instance_lists.read_instance_list(path, ToyInstance.from_json)

    def write_instances(self, path, instances, meta: dict | None = None) -> None:
        from labference_ros.core import instance_lists
        from toy_family.instances import GENERATOR_VERSION

        instance_lists.write_instance_list(path, instances, GENERATOR_VERSION, meta)

    def make_referee(self, contract, instance, *, episode_id: str, session_id: str, deadline_s: float | None = None):
        from toy_family.referee import Referee

        return Referee(contract, instance, episode_id=episode_id, session_id=session_id, deadline_s=deadline_s)

    def assets(self) -> dict:
        from toy_family.instances import GENERATOR_VERSION

        return {"revision": "toy_shuttle-scene-v1", "layout_revision": GENERATOR_VERSION}

    def cell_description(self):
        from labference_ros.cell.description import common_cell

        return common_cell()

    def build_scene(self, instance, fiducials: bool = False):
        from toy_family.scene import sim_scene

        return sim_scene(instance, fiducials)

    def evaluator_view(self, instance, measurement):
        from labference_ros.core.system import EvaluatorView

        return EvaluatorView(instance=instance, t=measurement.t,
                             positions={n: o.position for n, o in measurement.objects.items()})

    def state_payload(self, world) -> dict:
        from toy_family.contract import PUCK
        from toy_family.referee import pad_under

        return {"puck_on": pad_under(self.contract_for("basic"), world.measure().objects[PUCK].position)}

    def decision_rule(self, legal_set):
        ops = sorted(legal_set)
        return ([o for o in ops if o.physical] or ops or [None])[0]

    def geometry_frames(self, objects) -> list[dict]:
        return []

    def start_state(self, instance, operations) -> dict:
        pads = [op.destination for op in operations if op.destination]
        return {"on_pad": pads[-1] if pads else None}

    def measured_start_state(self, measurement) -> dict:
        from toy_family.contract import PUCK
        from toy_family.referee import pad_under

        return {"on_pad": pad_under(self.contract_for("basic"), measurement.objects[PUCK].position)}

    def handoff_instance(self, instance, state: dict):
        if state["on_pad"] is not None:
            raise ValueError("a toy start has the puck between the pads")
        return instance

    def plan_operation(self, planner, arm_q, instance, measurement, operation):
        from toy_family.contract import PUCK

        c = self.contract_for(instance.condition)
        return planner.plan_pick_set_down(arm_q, measurement.objects[PUCK].position, c.puck_radius_m,
                                          c.puck_height_m, c.pads[operation.destination], 0.0)

    def evaluation_chain(self, step_names) -> tuple:
        from toy_family.evaluation import STEP_PREDICATES

        return tuple((n, STEP_PREDICATES[n]) for n in step_names)


FAMILY = ToyFamily()
