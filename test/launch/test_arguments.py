"""Launch arguments: defaults, name:=value overrides, and clear errors before anything starts."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from labference_ros.cli.main import main
from labference_ros.graphs import graph_for
from labference_ros.graphs.weighing_sim import GRAPH
from labference_ros.launcher.arguments import LaunchArgumentError, parse_launch_arguments
from labference_ros.launcher.plan import node_processes, ros_value
from labference_ros.nodes.composed import parse_spec


def test_defaults_match_the_issue():
    d = parse_launch_arguments(GRAPH, [])
    assert d["episodes"] == "3" and d["system"] == "scripted_expert" and d["condition"] == "basic"
    assert d["seed"] == "0" and d["camera_rate"] == "10" and d["step_mode"] == "sync"
    assert d["deadline_s"] == "60" and d["instances"] == "" and d["output_dir"].startswith("runs/")


def test_overrides_and_last_one_wins():
    d = parse_launch_arguments(GRAPH, ["episodes:=7", "condition:=extended", "seed:=4", "seed:=5", "instances:="])
    assert (d["episodes"], d["condition"], d["seed"], d["instances"]) == ("7", "extended", "5", "")


def test_value_may_contain_the_separator():
    assert parse_launch_arguments(GRAPH, ["output_dir:=/tmp/a:=b"])["output_dir"] == "/tmp/a:=b"


def test_unknown_argument_lists_the_valid_names():
    with pytest.raises(LaunchArgumentError) as err:
        parse_launch_arguments(GRAPH, ["episdoes:=3"])
    text = str(err.value)
    assert "episdoes" in text
    assert all(a.name in text for a in GRAPH.arguments)


@pytest.mark.parametrize("token, needle", [("episodes", "name:=value"), (":=3", "name:=value"),
                                           ("condition:=hard", "basic, extended"),
                                           ("step_mode:=fast", "sync, realtime"),
                                           ("episodes:=three", "int"), ("camera_rate:=fast", "float")])
def test_bad_tokens_fail_with_a_reason(token, needle):
    with pytest.raises(LaunchArgumentError, match=needle):
        parse_launch_arguments(GRAPH, [token])


def test_cli_rejects_unknown_argument_before_starting_anything():
    result = CliRunner().invoke(main, ["launch", "weighing_sim.launch.py", "bogus:=1"])
    assert result.exit_code == 2
    assert "unknown launch argument 'bogus'" in result.output and "episodes" in result.output
    assert "started" not in result.output


def test_cli_unknown_launch_file_and_show_args():
    runner = CliRunner()
    bad = runner.invoke(main, ["launch", "nope.launch.py"])
    assert bad.exit_code == 2 and "weighing_sim.launch.py" in bad.output
    shown = runner.invoke(main, ["launch", "launch/weighing_sim.launch.py", "--show-args"])
    assert shown.exit_code == 0
    assert all(f"'{a.name}'" in shown.output for a in GRAPH.arguments)


def test_graph_lookup_by_any_spelling():
    for name in ("weighing_sim", "weighing_sim.launch.py", "launch/weighing_sim.launch.py"):
        assert graph_for(name) is GRAPH


def test_node_command_lines_carry_name_and_typed_parameters():
    procs = {p.name: p for p in node_processes(GRAPH, parse_launch_arguments(GRAPH, ["seed:=4", "instances:="]))}
    # lab_sim and the balance share a process (test/nodes/test_composed_process.py).
    assert set(procs) == {"lab_sim+balance", "referee", "policy_bridge", "oracle", "recorder", "episode_runner"}
    runner = procs["episode_runner"].argv
    assert runner[runner.index("-m") + 1] == "labference_ros.nodes.episode_runner"
    assert ("-r", "__node:=episode_runner") == runner[runner.index("--ros-args") + 1: runner.index("--ros-args") + 3]
    assert "seed:=4" in runner and "deadline_s:=60.0" in runner and "instances:=''" in runner
    assert procs["episode_runner"].ends_graph
    lab_sim, balance = parse_spec(procs["lab_sim+balance"].argv[-1])
    assert lab_sim["name"] == "lab_sim" and balance["name"] == "balance"
    assert "step_mode:='sync'" in lab_sim["arguments"] and "camera_rate:=10.0" in lab_sim["arguments"]
    assert not procs["lab_sim+balance"].ends_graph
    # No node runs on ROS time: sync-mode timers would wait for the clock they drive.
    assert not any("use_sim_time" in arg for p in procs.values() for arg in p.argv)


def test_ros_values_keep_their_type():
    assert ros_value(True) == "true" and ros_value(3) == "3" and ros_value(10.0) == "10.0"
    assert ros_value("0") == "'0'" and ros_value("") == "''" and ros_value("it's") == "'it''s'"


def test_substitute_for_an_unknown_executable_is_refused():
    with pytest.raises(ValueError, match="nonexistent"):
        node_processes(GRAPH, GRAPH.defaults(), substitutes={"nonexistent": "x.py"})
