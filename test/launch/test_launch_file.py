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
