"""The checked-in launch file is the generation of the graph description, and it compiles."""
from __future__ import annotations

import ast
import pathlib
import py_compile

from labference_ros.graphs import all_graphs
from labference_ros.graphs.launchgen import launch_path, launch_source, main as launchgen

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_checked_in_launch_files_equal_a_fresh_generation():
    for graph in all_graphs().values():
        path = launch_path(graph)
        assert path.is_file(), f"missing {path}: run python -m labference_ros.graphs.launchgen"
        assert path.read_text(encoding="utf-8") == launch_source(graph), \
            f"{path} is stale: run python -m labference_ros.graphs.launchgen"
    assert launchgen(["--check"]) == 0


def test_check_reports_a_stale_file(tmp_path):
    assert launchgen(["--out", str(tmp_path)]) == 0
    target = next(tmp_path.glob("*.launch.py"))
    target.write_text(target.read_text() + "# edited by hand\n")
    assert launchgen(["--check", "--out", str(tmp_path)]) == 1


def test_launch_files_compile_and_declare_every_argument_and_node():
    for graph in all_graphs().values():
        path = launch_path(graph)
        py_compile.compile(str(path), doraise=True)
        tree = ast.parse(path.read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        declared = [c.args[0].value for c in calls if c.func.id == "DeclareLaunchArgument"]
        assert declared == [a.name for a in graph.arguments]
        names = [kw.value.value for c in calls if c.func.id == "Node" for kw in c.keywords if kw.arg == "name"]
        assert names == [n.name for n in graph.nodes]
        assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)


def test_every_executable_has_an_installable_script(tmp_path):
    for graph in all_graphs().values():
        for node in graph.nodes:
            script = REPO / "scripts" / node.executable
            assert script.is_file(), script
            text = script.read_text()
            assert text.startswith("#!/usr/bin/env python3")
            assert f"from labference_ros.nodes.{node.executable} import main" in text
            py_compile.compile(str(script), cfile=str(tmp_path / node.executable), doraise=True)


def _stand_in_launch_modules(monkeypatch):
    """Just enough of ROS 2's launch and launch_ros to build a launch description."""
    import sys
    import types

    class Recorded:
        def __init__(self, *args, **kwargs):
            self.args, self.kwargs = args, kwargs

    for module, names in {"launch": ("LaunchDescription",),
                          "launch.actions": ("DeclareLaunchArgument", "SetEnvironmentVariable", "Shutdown"),
                          "launch.conditions": ("IfCondition",), "launch.substitutions": ("LaunchConfiguration",),
                          "launch_ros": (), "launch_ros.actions": ("Node",),
                          "launch_ros.parameter_descriptions": ("ParameterValue",)}.items():
        stub = types.ModuleType(module)
        for name in names:
            setattr(stub, name, type(name, (Recorded,), {}))
        monkeypatch.setitem(sys.modules, module, stub)


def test_the_runner_ending_unsuccessfully_fails_the_launch_and_a_success_shuts_it_down(monkeypatch):
    """ros2 launch: the runner's on_exit raises on a non-zero status (the launch service
    stops the graph and exits 1); on 0 it shuts the graph down."""
    import runpy
    from types import SimpleNamespace

    import pytest

    _stand_in_launch_modules(monkeypatch)
    for graph in all_graphs().values():
        module = runpy.run_path(str(launch_path(graph)))
        description = module["generate_launch_description"]()
        nodes = [e for e in description.args[0] if type(e).__name__ == "Node"]
        (runner,) = [n for n in nodes if n.kwargs["name"] == "episode_runner"]
        on_exit = runner.kwargs["on_exit"]
        with pytest.raises(RuntimeError, match="episode_runner ended with exit code 4"):
            on_exit(SimpleNamespace(returncode=4), None)
        (shutdown,) = on_exit(SimpleNamespace(returncode=0), None)
        assert type(shutdown).__name__ == "Shutdown" and shutdown.kwargs["reason"] == "episode_runner finished"
        others = [n for n in nodes if n is not runner]
        assert all(type(n.kwargs["on_exit"]).__name__ == "Shutdown" for n in others)


def test_the_projects_launch_folder_never_shadows_ros2s_launch_package(tmp_path):
    """The repository root is on sys.path (editable install, `python -m` from the root),
    and launch/ holds the launch files. Without an __init__.py it is at most a namespace
    portion, which any regular `launch` package on sys.path (ROS 2's) takes precedence
    over, wherever it stands in the path."""
    import subprocess
    import sys

    assert not (REPO / "launch" / "__init__.py").exists()
    ros = tmp_path / "ros_site" / "launch"
    ros.mkdir(parents=True)
    (ros / "__init__.py").write_text("WHO = 'ros2'\n")
    code = "import launch; print(launch.WHO, launch.__file__)"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": f"{REPO}:{tmp_path / 'ros_site'}", "PATH": "/usr/bin:/bin"})
    assert res.stdout.split() == ["ros2", str(ros / "__init__.py")], res.stdout + res.stderr
