"""Bad launch arguments and system parameters are usage errors naming the
argument and what it accepts, found before any node starts; no traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from labference_ros.cli.main import main


def launch(*tokens: str, tmp_path=None):
    args = list(tokens)
    if tmp_path is not None and not any(t.startswith("output_dir:=") for t in args):
        args.append(f"output_dir:={tmp_path / 'run'}")
    return CliRunner().invoke(main, ["launch", "weighing_sim.launch.py", *args])


@pytest.mark.parametrize("tokens, needles", [
    (["system:=nosuchsystem"], ["'system'", "nosuchsystem", "scripted_expert", "http", "openpi"]),
    (["system_params:={not json"], ["'system_params'", "JSON object"]),
    (["system_params:=[1, 2]"], ["'system_params'", "JSON object"]),
    (["system:=http", 'system_params:={"urll": "http://127.0.0.1:1"}'],
     ["system_params of system 'http'", "unknown key(s) urll", "allowed:", "url", "timeout_s", "max_reply_rows"]),
    (["system:=http", 'system_params:={"timeout_s": "soon"}'], ["'timeout_s' must be a number", '"soon"']),
    (["system:=http", 'system_params:={"url": "http://127.0.0.1:8000/act"}'],
     ["'url' is the server's base URL", "/act/act"]),
    (["system:=fixed_preference", 'system_params:={"preference": "std_7"}'], ["refused", "unknown standard"]),
    (["episodes:=-1"], ["'episodes'", "at least 1", "'-1'"]),
    (["episodes:=0"], ["'episodes'", "at least 1"]),
    (["deadline_s:=0"], ["'deadline_s'", "above 0"]),
    (["deadline_s:=nan"], ["'deadline_s'", "above 0"]),
    (["camera_rate:=-5"], ["'camera_rate'", "above 0"]),
    (["image_width:=2"], ["'image_width'", "at least 8"]),
    (["seed:=-3"], ["'seed'", "at least 0"]),
    (["support:=replace:nowhere"], ["'support'", "nowhere"]),
    # Capability negotiation: a site the system does not expose is refused, never run as "supported".
    (["system:=fixed_preference", "support:=replace:state"],
     ["'support'", "'fixed_preference' cannot take replace:state (incompatible:action_only)", "misreader"]),
    (["system:=openpi", "support:=replace:state"], ["'openpi' cannot take", "incompatible:action_only",
                                                    "accepts_support"]),
    # A remote server takes only what it declares, and only sites a remote server can take.
    (["system:=http", "support:=assist:decision", 'system_params:={"accepts_support": "assist:state"}'],
     ["'http' cannot take assist:decision (incompatible:no_decision_interface)"]),
    (["system:=http", 'system_params:={"accepts_support": "replace:skill"}'],
     ["accepts_support", "'replace:skill' is not a support a remote server can take"]),
    (["system:=misreader", "support:=assist:skill"],
     ["'misreader' cannot take assist:skill (incompatible:assist_not_accepted_at_skill)"]),
    # The agent takes Assist at state and decision only: it has no separable output to replace.
    (["system:=agent", "agent_model:=m", "support:=replace:state"],
     ["'agent' cannot take replace:state (incompatible:replace_not_accepted_at_state)"]),
    (["instances:=/nonexistent/list.json"], ["'instances'", "/nonexistent/list.json"]),
])
def test_usage_errors_name_the_argument(tmp_path, tokens, needles):
    res = launch(*tokens, tmp_path=tmp_path)
    assert res.exit_code == 2, res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    assert "Traceback" not in res.output and "started" not in res.output
    assert not (tmp_path / "run").exists()  # nothing started, nothing written


@pytest.mark.parametrize("tokens, needles", [
    (["command_latency_s:=0.02"], ["'command_latency_s' and 'command_delivery_s'", "latency 0.02 s must exceed",
                                   "row interval 0.02 s plus the delivery allowance 0.005 s"]),
    (["command_latency_s:=0.3", "command_delivery_s:=0.001"], ["delivery allowance 0.001 s must be at least 0.002 s"]),
    (["command_delivery_s:=-1"], ["'command_delivery_s'", "above 0"]),
    (["joint_state_timeout_s:=0"], ["'joint_state_timeout_s'", "above 0"]),
])
def test_the_real_launchs_arm_timing_is_checked_before_anything_starts(tmp_path, tokens, needles):
    res = CliRunner().invoke(main, ["launch", "weighing_real.launch.py", "discovery:=localhost", *tokens,
                                    f"output_dir:={tmp_path / 'run'}"])
    assert res.exit_code == 2, res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    assert "Traceback" not in res.output and not (tmp_path / "run").exists()


def test_an_instance_with_a_binding_the_cell_lacks_is_named_before_anything_starts(tmp_path):
    import json

    from labference_ros.tasks import family

    weighing = family("feedback_weighing")
    listed = tmp_path / "list.json"
    weighing.write_instances(listed, weighing.generate("heldout_blocks", 1, 1, 1, 1))
    data = json.loads(listed.read_text())
    data["instances"][0]["binding"] = "marble"
    listed.write_text(json.dumps(data))
    res = launch(f"instances:={listed}", tmp_path=tmp_path)
    assert res.exit_code == 2, res.output
    assert "has no object binding 'marble' (known: default, blocks)" in res.output, res.output
    assert "Traceback" not in res.output and not (tmp_path / "run").exists()


def test_output_dir_below_a_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    res = launch(f"output_dir:={tmp_path / 'afile' / 'run'}")
    assert res.exit_code == 2 and "'output_dir'" in res.output and "not a directory" in res.output


def test_read_only_output_dir(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:  # root ignores permission bits: a read-only mount refuses root too
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode().strip()}")
    else:
        ro.chmod(0o555)
    try:
        res = launch(f"output_dir:={ro / 'run'}")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(ro)], check=True)
        else:
            ro.chmod(0o755)
    assert res.exit_code == 2, res.output
    assert "'output_dir'" in res.output and "cannot write" in res.output and "Traceback" not in res.output


def test_a_run_that_cannot_fit_is_refused(tmp_path):
    res = launch("episodes:=1000000", f"output_dir:={tmp_path / 'run'}")
    assert res.exit_code == 1, res.output
    assert "not enough free space" in res.output and "free_space_check:=false" in res.output
    assert "1000000 episodes" in res.output and "started" not in res.output


def test_unexpected_errors_print_one_line_and_log_the_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("LABFERENCE_LOG_DIR", str(tmp_path / "logs"))
    lock = tmp_path / "broken.lock.json"
    lock.write_text("{ not json")
    res = CliRunner().invoke(main, ["campaign", "status", str(lock)])
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "JSONDecodeError" in res.output
    logs = list((tmp_path / "logs").iterdir())
    assert len(logs) == 1 and str(logs[0]) in res.output
    assert "Traceback" in logs[0].read_text()


@pytest.mark.parametrize("args, needle", [(["--system", "nosuch", "--support", "replace:state"], "'--system'"),
                                          (["--system", "misreader", "--support", "replace:nowhere"], "'--support'")])
def test_diagnose_oracle_usage_errors(tmp_path, args, needle):
    res = CliRunner().invoke(main, ["diagnose-oracle", str(tmp_path / "pop.json"), *args])
    assert res.exit_code == 2 and needle in res.output and "Traceback" not in res.output


def test_a_node_that_cannot_start_prints_one_line_and_logs_the_traceback(tmp_path):
    # What `ros2 launch` (which skips the launcher's checks) would show for a bad system.
    env = {**os.environ, "LABFERENCE_LOG_DIR": str(tmp_path / "logs")}
    proc = subprocess.run([sys.executable, "-m", "labference_ros.nodes.policy_bridge", "--ros-args",
                           "-p", "system:=nosuch"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 70, proc.stdout + proc.stderr
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text and "unknown tested system 'nosuch'" in text
    (log,) = (tmp_path / "logs").iterdir()
    assert f"traceback in {log}" in text and "Traceback" in log.read_text()
