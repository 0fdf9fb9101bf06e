"""`campaign lock` checks its spec against a JSON Schema (jsonschema) and refuses
what could never run: unknown launch files and tested systems. Usage errors, not
tracebacks."""
import json

import pytest
import yaml
from click.testing import CliRunner

from labference_ros.cli.main import main
from certified import certified_list


def lock(tmp_path, spec):
    (tmp_path / "list.json").write_text(json.dumps(certified_list([{"instance_id": "i0"}])))
    path = tmp_path / "spec.yaml"
    path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec))
    return CliRunner().invoke(main, ["campaign", "lock", str(path)])


ARM = {"system": "scripted_expert", "condition": "basic", "instances": "list.json"}


@pytest.mark.parametrize("spec, needles", [
    ("arms: [unclosed", ["not valid YAML"]),
    ("- just\n- a list\n", ["spec: ", "is not of type 'object'"]),
    ({"arms": []}, ["no arms"]),
    ({"arms": [{**ARM, "generate": {"n": -2}}]}, ["spec.arms[0].generate.n", "-2 is less than the minimum of 1"]),
    ({"arms": [{"system": "scripted_expert", "condition": "basic"}]}, ["spec.arms[0]", "is not valid under any"]),
    ({"arms": [ARM], "chunk_size": "ten"}, ["spec.chunk_size", "'ten' is not of type 'integer'"]),
    ({"arms": [ARM], "armz": 1}, ["Additional properties are not allowed ('armz' was unexpected)"]),
    ({"arms": [{**ARM, "system": "nosuchsystem"}]}, ["unknown tested system 'nosuchsystem'", "scripted_expert"]),
    ({"arms": [ARM], "launch_file": "nope.launch.py"}, ["launch_file", "nope"]),
])
def test_bad_specs_are_refused_naming_the_place(tmp_path, spec, needles):
    res = lock(tmp_path, spec)
    assert res.exit_code == 1, res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    assert "Traceback" not in res.output
    assert not (tmp_path / "spec.lock.json").exists()


def test_jsonschema_is_pinned():
    from importlib.metadata import version
    from pathlib import Path

    pins = (Path(__file__).resolve().parents[2] / "env" / "constraints.txt").read_text().split()
    assert f"jsonschema=={version('jsonschema')}" in pins
