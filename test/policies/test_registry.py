"""The tested-system registry: explicit, lazy, open to plug-ins, with declared hooks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from labference_ros.core.system import TestedSystem
from labference_ros.policies import available, make, system_class

HEAVY = ("mujoco", "cv2", "mink", "rclpy", "labference_ros.sim", "labference_ros.tasks.weighing.systems",
         "labference_ros.skills", "labference_ros.perception")


def _imported_after_lookup(name: str, extra_path: str = "") -> list[str]:
    code = textwrap.dedent(f"""
        import json, sys
        from labference_ros.policies import system_class
        system_class({name!r})
        heavy = {HEAVY!r}
        print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
    """)
    env = {**os.environ}
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["http", "openpi"])
def test_looking_up_a_remote_system_imports_no_simulator_or_vision(name):
    assert _imported_after_lookup(name) == []


def test_looking_up_a_pixel_reference_system_imports_its_own_dependencies():
    # The control: the same check sees the heavy imports where they belong.
    loaded = _imported_after_lookup("display_reader")
    assert "cv2" in loaded and "labference_ros.perception.vision" in loaded
    assert not any(m == "labference_ros.sim" or m.startswith("labference_ros.sim.") for m in loaded)


def test_every_builtin_name_resolves_to_its_class():
    names = available()
    assert {"scripted_expert", "display_reader", "fixed_preference", "misreader", "mislocator",
            "unsteady_grasp", "http", "openpi", "agent"} <= set(names)
    for name in names:
        cls = system_class(name)
        assert issubclass(cls, TestedSystem) and cls.name == name
    assert system_class("scripted_expert").privileged and not system_class("display_reader").privileged


def test_unknown_system_names_the_registered_ones():
    with pytest.raises(KeyError, match="unknown tested system 'nosuchsystem'.*scripted_expert"):
        make("nosuchsystem")


def test_a_users_system_plugs_in_through_the_entry_point_group(tmp_path):
    (tmp_path / "my_lab_policy.py").write_text(textwrap.dedent("""
        import numpy as np
        from labference_ros.core.system import TestedSystem

        class HoldStill(TestedSystem):
            def act(self, observation, evaluator=None):
                return np.zeros((1, self.spec.dim))
    """))
    dist = tmp_path / "my_lab_policy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-lab-policy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[labference.systems]\nhold_still = my_lab_policy:HoldStill\n")
    code = ("from labference_ros.policies import available, make; "
            "s = make('hold_still'); print('hold_still' in available(), s.name, s.profile()['implementation'])")
    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "hold_still", "my_lab_policy.HoldStill"]


def test_optional_hooks_have_declared_defaults():
    class Minimal(TestedSystem):
        def act(self, observation, evaluator=None):
            return np.zeros((1, self.spec.dim))

    system = Minimal()
    assert system.interfaces() is None  # action-only: no Oracle support can reach it
    assert system.drain_reports() == []
    assert system.end_episode("deadline") is None
    system.set_output_dir("/nonexistent")  # accepted and ignored
    system.stop_dispatch("finished")
