"""A toy task family outside the project, as a user adds one: this folder alone,
registered through LABFERENCE_TASKS (labference_ros.tasks). One puck, two pads; the
instruction names the pad the puck goes to. It declares what the registry, the
launcher and the tested-system registry look up; test_toy_family_plugin.py checks
that each finds it without a file outside this folder changed."""
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


FAMILY = ToyFamily()
