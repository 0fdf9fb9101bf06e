"""lab_sim offers ROS 2 simulation_interfaces (nodes/sim_interfaces.py): a client that
speaks only the standard loads an instance's world, lists and moves entities, steps
(service and action), resets, and is told what lab_sim does not offer."""
from __future__ import annotations

import json
import pathlib
import sys
from types import SimpleNamespace

import pytest

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc

REPO = pathlib.Path(__file__).resolve().parents[2]
OK, NOT_FOUND, INCORRECT_STATE, FAILED = 1, 2, 3, 4


def test_entities_are_selected_by_a_searched_name_pattern_and_by_category():
    from simulation_interfaces.msg import EntityCategory

    from labference_ros.nodes.sim_interfaces import select_entities

    entities = [SimpleNamespace(name=n, category=c) for n, c in
                (("robot", "robot"), ("pan", "fixture"), ("std_10", "object"), ("sample", "object"))]

    def names(pattern, categories=()):
        return [e.name for e in select_entities(entities, pattern, set(categories))]

    assert names("") == ["robot", "pan", "std_10", "sample"]
    assert names("std|pan") == ["pan", "std_10"]
    assert names("", [EntityCategory.CATEGORY_DYNAMIC_OBJECT]) == ["std_10", "sample"]
    assert names("^s", [EntityCategory.CATEGORY_DYNAMIC_OBJECT, EntityCategory.CATEGORY_ROBOT]) == ["std_10",
                                                                                                     "sample"]
    with pytest.raises(ValueError, match="bad name filter"):
        names("(")


def test_a_world_resource_is_its_string_or_the_file_its_uri_names(tmp_path):
    from labference_ros.nodes.sim_interfaces import world_text

    path = tmp_path / "instance with space.json"
    path.write_text('{"x": 1}')
    assert world_text(SimpleNamespace(resource_string="abc", uri="file:///nope")) == "abc"
    assert world_text(SimpleNamespace(resource_string="", uri=path.as_uri())) == '{"x": 1}'
    assert world_text(SimpleNamespace(resource_string="", uri=str(path))) == '{"x": 1}'
    with pytest.raises(LookupError):
        world_text(SimpleNamespace(resource_string="", uri=""))
    with pytest.raises(ValueError, match="scheme"):
        world_text(SimpleNamespace(resource_string="", uri="omniverse://host/cell.usd"))


@pytest.mark.slow
def test_a_standard_client_loads_steps_moves_and_resets_lab_sim():
    from simulation_interfaces.msg import SimulationState, SimulatorFeatures
    from simulation_interfaces.srv import SetSimulationState

    from labference_ros.nodes.sim_interfaces import FEATURES

    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim"], env=env)
        probe = Proc([sys.executable, str(REPO / "test" / "peers" / "sim_interfaces_probe.py")], env=env)
        lines = probe.wait_for("RESULT", timeout=180)
        probe.stop()
        assert sim.popen.poll() is None, sim.seen[-20:]
        sim.stop()
    assert lines, probe.seen[-20:]
    out = json.loads(lines[0].removeprefix("RESULT "))
    dt = 0.002  # the weighing scene's physics step
    assert out["state_before"] == SimulationState.STATE_NO_WORLD
    assert out["states_before"] == [OK, "", []]  # asked before any world: nothing, and lab_sim stays up
    assert out["features"] == sorted(FEATURES)
    assert SimulatorFeatures.SPAWNING not in out["features"]  # entities come with the world
    result, code_message, name, instance_id = out["load_world"][0], out["load_world"][1], *out["load_world"][2:]
    assert (result, code_message, name) == (OK, "", instance_id)
    assert out["state_loaded"] == SimulationState.STATE_PAUSED
    assert out["entities"][:1] == ["robot"] and {"pan", "balance_body", "sample"} <= set(out["entities"])
    assert out["robots"] == ["robot"]
    assert out["standards"] and all(n.startswith("std_") for n in out["standards"])
    assert set(out["states"]) == set(out["entities"])
    assert all(t == 0.0 for t, _z in out["states"].values())
    assert out["start"]["result"] == [OK, ""] and out["start"]["frame"] == "world"
    assert out["step"] == [OK, ""]
    assert out["after_step"]["t"] == pytest.approx(50 * dt)
    action = out["simulate_steps"]
    assert action["accepted"] and action["result"] == [OK, ""]
    assert action["feedback"] == [[50, 70], [100, 20], [120, 0]]
    assert out["after_action"]["t"] == pytest.approx(170 * dt)
    assert out["set_pose"] == [OK, ""]
    assert out["after_set"]["position"][2] == pytest.approx(out["start"]["position"][2] + 0.05, abs=1e-6)
    assert out["set_fixture"][0] == FAILED and "not a free object" in out["set_fixture"][1]
    assert out["reset"] == [OK, ""]
    assert out["after_reset"]["t"] == 0.0
    assert out["after_reset"]["position"] == pytest.approx(out["start"]["position"], abs=1e-9)
    assert out["play"][0] == SetSimulationState.Response.STATE_TRANSITION_ERROR and "sync" in out["play"][1]
    assert out["unknown"][0] == NOT_FOUND


def sim_check(env, *args: str):
    import subprocess

    return subprocess.run([sys.executable, "-c", "from labference_ros.cli.main import main; main()", "sim-check",
                           *args], env=env, capture_output=True, text=True, timeout=240)


def test_a_verdict_names_every_missing_feature_and_rates_count_distinct_stamps():
    from labference_ros.cli.sim_check import Finding, entity_matches, rate_finding, verdict

    assert verdict([Finding("a", True, ""), Finding("b", True, "")]).startswith("verdict: PASS")
    assert verdict([Finding("a", False, ""), Finding("b", True, ""), Finding("c", False, "")]) == \
        "verdict: FAIL: 2 of 3 features missing: a, c"
    assert entity_matches("sample", ["/World/sample"]) and entity_matches("sample", ["sample"])
    assert not entity_matches("sample", ["/World/sample_holder", "samples"])
    # 51 measurements over 0.5 s (both ends): 102 Hz; the same stamp twice counts once.
    assert rate_finding("t", [k / 100 for k in range(51)] * 2, 100.0, 0.5).ok
    slow = rate_finding("t", [k / 50 for k in range(26)], 100.0, 0.5)
    assert not slow.ok and slow.detail.startswith("52.0 Hz")
    assert not rate_finding("t", [], 10.0, 0.5).ok


@pytest.mark.slow
def test_sim_check_passes_against_lab_sim_and_names_a_removed_service():
    """The same lab_sim, then one whose step_simulation service is remapped away: sim-check
    passes the first and names what is missing from the second (the service, and the step
    control and the rates it takes away); without a simulator it says so (exit 2)."""
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim"], env=env)
        passed = sim_check(env, "--timeout", "60")
        assert sim.popen.poll() is None, sim.seen[-20:]
        sim.stop()
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-r",
                    "/step_simulation:=/step_simulation_removed"], env=env)
        failed = sim_check(env, "--timeout", "60")
        sim.stop()
        nobody = sim_check(env, "--timeout", "1")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    lines = passed.stdout.splitlines()
    assert lines[-1].startswith("verdict: PASS") and all(line.startswith("PASS") for line in lines[:-1])
    for expected in ("service StepSimulation", "action SimulateSteps", "entity sample", "topic /balance/wrench",
                     "topic /cameras/display/image_raw", "topic /panda_arm_controller/joint_trajectory"):
        assert any(line.startswith(f"PASS  {expected}:") for line in lines), (expected, lines)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    verdict_line = failed.stdout.splitlines()[-1]
    assert verdict_line.startswith("verdict: FAIL:") and "service StepSimulation" in verdict_line
    assert "step control: StepSimulation moves sim time" in verdict_line
    assert "FAIL  service StepSimulation: /step_simulation not offered" in failed.stdout
    assert "service LoadWorld" not in verdict_line and "entity sample" not in verdict_line
    assert nobody.returncode == 2 and "no simulator answered" in nobody.stdout


@pytest.mark.slow
def test_the_runners_reset_through_simulation_interfaces_loads_the_instance_once_and_names_what_failed():
    """sim_loader (the runner's reset in the simulator-neutral graph) against a realtime
    lab_sim: LoadWorld loads the instance (lab_sim's tare shows the load), answered with its
    layout hash; the same reset asked again is answered without a second load; a broken
    instance, and a simulator that offers no LoadWorld, are refusals that say why."""
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-p",
                    "step_mode:=realtime"], env=env)
        loader = Proc([sys.executable, "-m", "labference_ros.nodes.sim_loader"], env=env)
        nowhere = Proc([sys.executable, "-m", "labference_ros.nodes.sim_loader", "--ros-args", "-r",
                        "__node:=nowhere_loader", "-p", "namespace:=/nowhere", "-p", "reset_timeout_s:=1.0"], env=env)
        probe = Proc([sys.executable, str(REPO / "test" / "peers" / "sim_loader_probe.py")], env=env)
        lines = probe.wait_for("RESULT", timeout=180)
        probe.stop()
        said = loader.wait_for("\0", timeout=0.5) or loader.seen
        for proc in (nowhere, loader, sim):
            proc.stop()
    assert lines, probe.seen[-20:] + loader.seen[-20:] + sim.seen[-20:]
    out = json.loads(lines[0].removeprefix("RESULT "))
    first_hash, second_hash = out["layout_hashes"]
    first = out["first"]
    assert first["success"] and "through LoadWorld" in first["message"], first
    assert (first["layout_hash"], first["scene_hash"], first["tares"]) == (first_hash, "", 1), first
    # The sim time of the first /clock after the load (lab_sim's restarts at 0), not a fallback.
    assert 0.0 <= first["sim_time"] < 5.0, first
    assert not any("no /clock" in line for line in loader.seen), said
    repeated = out["repeated"]
    assert repeated == {**first, "tares": 1}, repeated  # answered again, not loaded again
    assert any("asked again" in line for line in loader.seen), said
    broken = out["broken"]
    assert not broken["success"] and broken["message"].startswith("reset failed:") and broken["tares"] == 1
    second = out["second"]
    assert second["success"] and second["layout_hash"] == second_hash and second["tares"] == 2, second
    nothing = out["no_simulator"]
    assert not nothing["success"] and nothing["message"] == ("LoadWorld: /nowhere/load_world is not offered "
                                                             "(waited 1 s for the reset)"), nothing
