"""The episode runner against stand-in nodes: real processes, real DDS on loopback.

The stand-ins (fake_nodes/) serve the services and topics of the real lab_sim,
referee and policy_bridge; environment knobs choose what each episode does.
"""
from __future__ import annotations

import json
import signal
import time

import psutil
import pytest

from labference_ros.tasks.weighing.instances import read_instance_list
from launch_helpers import launch_with_fakes


def read_summary(run_dir):
    return json.loads((run_dir / "summary.json").read_text())


def test_every_episode_is_kept_including_an_errored_one(tmp_path):
    run_dir = tmp_path / "run"
    # 0 completes, 1's policy bridge never answers its start in time (the runner waits
    # service_timeout_s + 10 s for it: its own waits, a policy server's reset, come
    # first), 2 runs to the sim-time deadline, 3 is stopped by the policy. The deadline
    # leaves 0's completion (1 s of sim after its start, at 5x real time) seconds of
    # margin under load. service_timeout_s 8: a recorder start waits up to 5 s for the
    # world state's writer.
    proc = launch_with_fakes(["episodes:=4", "deadline_s:=10", "service_timeout_s:=8", f"output_dir:={run_dir}"],
                             {"FAKE_COMPLETE": "0", "FAKE_BRIDGE_HANG": "1", "FAKE_HANG_S": "24",
                              "FAKE_BRIDGE_DONE": "3"})
    try:
        # 3: every episode ran, one was not scored.
        assert proc.popen.wait(timeout=240) == 3, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)  # drain the output
    out = "\n".join(proc.seen)
    summary = read_summary(run_dir)
    rows = summary["per_episode"]
    assert [r["episode_id"].split("_")[0] for r in rows] == ["0000", "0001", "0002", "0003"]
    assert [r["reason"] for r in rows] == ["completed", "error", "deadline", "policy_stop"]
    assert [r["status"] for r in rows] == ["ok", "error", "ok", "ok"]
    assert "did not answer within 18 s" in rows[1]["error"]
    assert rows[0]["complete"] is True and rows[0]["selection_correct"] is True
    assert rows[2]["sim_s"] >= 10.0  # the deadline is in sim seconds
    overall = summary["overall"]
    assert overall["episodes"] == 4 and overall["errors"] == 1
    assert {k: overall["selection"][k] for k in ("count", "n", "rate")} == {"count": 1, "n": 4, "rate": 0.25}
    assert overall["selection"]["ci95"]["lo"] < 0.25 < overall["selection"]["ci95"]["hi"]
    assert overall["completion"]["count"] == 1
    assert summary["per_group"][0]["system"] == "scripted_expert" and summary["run"]["interrupted"] is False
    # The plan was fixed and written before evaluation; every attempt has its own records.
    assert len(read_instance_list(run_dir / "instances.json")) == 4
    assert len((run_dir / "attempts.jsonl").read_text().splitlines()) == 4
    for r in rows:
        assert (run_dir / "episodes" / r["episode_id"] / "attempt.json").is_file()
        assert (run_dir / "episodes" / r["episode_id"] / "scores.json").is_file()  # the referee's
    assert "[episode_runner] all" in out and "1/4 (25.0 %)" in out
    assert "episode_runner finished (exit code 3)" in out
    # One console line for the errored episode, naming its cause and kind; the table names the kinds.
    lines = [line for line in proc.seen if "] episode 0001_" in line]
    assert len(lines) == 1 and "did not answer within 18 s [service_timeout]" in lines[0], lines
    assert "1 (service_timeout 1)" in out and "1 of 4 episodes were not scored" in out
    assert overall["error_kinds"] == {"service_timeout": 1}
    assert "Traceback" not in out


def test_a_node_dying_mid_run_is_reported_and_the_attempt_kept(tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_with_fakes(["episodes:=3", "deadline_s:=2", f"output_dir:={run_dir}"],
                             {"FAKE_SIM_EXIT_AT": "1"})
    try:
        code = proc.popen.wait(timeout=240)
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    out = "\n".join(proc.seen)
    assert "lab_sim died (exit code 3): stopping all nodes" in out
    assert code == 4  # the runner's "stopped before every instance ran"
    summary = read_summary(run_dir)
    assert summary["run"]["interrupted"] is True
    rows = summary["per_episode"]
    assert [r["status"] for r in rows] == ["ok", "error"]
    assert "stopped during the episode" in rows[1]["error"]
    # The attempt row names the node that left, and its kind says so.
    assert "node lab_sim left the graph: it died (exit code 3)" in rows[1]["error"]
    assert rows[1]["error_kind"] == "node_left"


@pytest.mark.parametrize("signals", [1, 3])
def test_sigterm_stops_the_whole_graph_and_keeps_the_attempt(tmp_path, signals):
    """However many times the launcher is told to stop, the interrupted episode's row is kept."""
    run_dir = tmp_path / "run"
    proc = launch_with_fakes(["episodes:=2", "deadline_s:=100000", "free_space_check:=false", f"output_dir:={run_dir}"])
    launcher = psutil.Process(proc.popen.pid)
    try:
        assert proc.wait_for("[lab_sim] reset 0000", timeout=120), proc.seen
        nodes = launcher.children(recursive=True)
        assert len(nodes) >= 5
        for _ in range(signals):
            proc.popen.send_signal(signal.SIGTERM)
            time.sleep(0.2)
        code = proc.popen.wait(timeout=60)
    finally:
        proc.stop()
    gone, alive = psutil.wait_procs(nodes, timeout=10)
    assert not alive, f"orphans: {alive}"
    assert code == 4
    proc.wait_for("\0", timeout=2)
    assert any("received SIGTERM" in line for line in proc.seen)
    assert not any("received SIGKILL" in line for line in proc.seen)
    assert not any("Traceback" in line for line in proc.seen), "\n".join(proc.seen)  # no spurious _Stop on shutdown
    summary = read_summary(run_dir)
    rows = summary["per_episode"]
    assert len(rows) == 1 and rows[0]["status"] == "error" and rows[0]["error_kind"] == "interrupted"
    assert summary["run"]["interrupted"] is True
    assert len((run_dir / "attempts.jsonl").read_text().splitlines()) == 1


def test_unreadable_instance_list_fails_before_any_episode(tmp_path):
    bad = tmp_path / "instances.json"
    bad.write_text('{"schema": 99, "instances": []}')
    proc = launch_with_fakes([f"instances:={bad}", f"output_dir:={tmp_path / 'run'}"])
    try:
        code = proc.popen.wait(timeout=120)
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    assert code == 2  # a usage error of the launcher: no node started
    assert any("launch argument 'instances'" in line and "unsupported instance list schema" in line
               for line in proc.seen), proc.seen
    assert not any("started" in line for line in proc.seen)
    assert not (tmp_path / "run" / "summary.json").exists()


def test_run_json_is_accepted_by_the_records_run_info():
    # The referee hands run_json's sections to core.records.run_info as keywords.
    from labference_ros.tasks.weighing.contract import contract_for
    from labference_ros.tasks.weighing.instances import generate
    from labference_ros.core.records import run_info
    from labference_ros.episodes.plan import RunSettings, run_json

    instance = generate("basic", 1, 0, 0, 0, layout_fn=None)[0]
    settings = RunSettings(1, "scripted_expert", "basic", 0, "runs/x", "", 60.0, "sync", 10.0)
    info = run_info(contract_for("basic"), instance, episode_id="e", **json.loads(run_json(settings, instance)))
    assert info["policy"]["system"] == "scripted_expert" and info["budgets"]["deadline_sim_s"] == 60.0


def test_run_json_identity_fields_are_written_and_differing_assets_refuse_to_pool(tmp_path):
    """The identities the report checks before aggregation carry real values
    (not empty == empty), and two runs that differ only in scene assets never pool."""
    import shutil

    import pytest

    from labference_ros.cell.assets import CELL_DIR, asset_files, asset_revision
    from labference_ros.core.records import run_info
    from labference_ros.episodes.plan import RunSettings, run_json
    from labference_ros.reporting.identity import IdentityMismatch, group_checked, identity
    from labference_ros.tasks import family
    from labference_ros.tasks.weighing.contract import contract_for
    from labference_ros.tasks.weighing.instances import generate

    weighing = family("feedback_weighing")
    instance = generate("basic", 1, 0, 0, 0)[0]
    settings = RunSettings(1, "scripted_expert", "basic", 0, "runs/x", "", 60.0, "sync", 10.0,
                           image_width=128, image_height=96)

    def episode(eid, assets):
        run = run_info(contract_for("basic"), instance, episode_id=eid,
                       **json.loads(run_json(settings, instance, assets)))
        run["policy"]["action_spec_hash"] = "spec"
        return {"episode_id": eid, "run": run}

    assets = weighing.assets()
    ident = identity(episode("a", assets)["run"])
    assert ident["observation_condition"] == "rgb:front+wrist+display@128x96/10Hz"
    assert ident["history_protocol"] == "single_delivery+last_8_steps"
    assert ident["layout_revision"] == "weighing-layout-v1"
    assert ident["asset_revision"] == assets["revision"] and len(assets["revision"]) == 16

    # The same cell description with one colour changed: another asset revision.
    edited = tmp_path / "weighing_cell.yaml"
    shutil.copy(CELL_DIR / "weighing_cell.yaml", edited)
    edited.write_text(edited.read_text() + "\n# a retextured label\n")
    other = {**assets, "revision": asset_revision(asset_files(edited))}
    assert other["revision"] != assets["revision"]
    assert len(group_checked([episode("a", assets), episode("b", assets)])) == 1
    with pytest.raises(IdentityMismatch) as err:
        group_checked([episode("a", assets), episode("b", other)])
    assert set(err.value.fields) == {"asset_revision"}


def _launch_real_with_fakes(args, knobs, arm="fake_idle.py", gripper="fake_idle.py", tracker="fake_idle.py"):
    import os
    import sys

    from launch_helpers import FAKES
    from rosproc import Proc

    labference = os.path.join(os.path.dirname(sys.executable), "labference")
    # discovery:=localhost: no robot PC to reach (the real graph's default is the subnet);
    # confirm:=auto unless the test plays the operator.
    confirm = [] if any(a.startswith("confirm:=") for a in args) else ["confirm:=auto"]
    # A stood-in arm bridge homes nothing: the runner is not to wait for it.
    if arm is not None and not any(a.startswith("arm_homing:=") for a in args):
        confirm.append("arm_homing:=false")
    argv = [labference, "launch", "weighing_real.launch.py", "discovery:=localhost", *confirm, *args]
    for exe, fake in {"balance_sics": "fake_balance.py", "fiducial_tracker": tracker,
                      "world_estimator": "fake_world_estimator.py", "referee": "fake_referee.py",
                      "policy_bridge": "fake_policy_bridge.py", "franka_gripper_bridge": gripper,
                      "franka_arm_bridge": arm}.items():
        if fake is not None:  # None: the real node
            argv += ["--substitute", f"{exe}={FAKES / fake}"]
    return Proc(argv, env={**os.environ, **knobs})


def test_the_operator_is_asked_until_the_scene_matches_then_the_episode_runs(tmp_path):
    run_dir = tmp_path / "run"
    proc = _launch_real_with_fakes(["episodes:=1", "deadline_s:=30", "service_timeout_s:=10", "record:=false",
                                    f"output_dir:={run_dir}"],
                                   {"FAKE_COMPLETE": "0", "FAKE_SETUP_REFUSALS": "2"})
    try:
        assert proc.popen.wait(timeout=240) == 0, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    out = "\n".join(proc.seen)
    # Asked three times, the same refusal said once, then the episode ran.
    assert [line.split("#")[-1] for line in proc.seen if "scene check 0000_" in line] == ["1", "2", "3"]
    assert out.count("set the scene up as the instance says") == 1, out
    assert "std_10: marker not seen" in out
    rows = read_summary(run_dir)["per_episode"]
    assert [(r["reason"], r["status"]) for r in rows] == [("completed", "ok")]
    assert rows[0]["setup_wall_s"] >= 2.0  # two refusals, a second apart, count as set-up time


@pytest.mark.slow
def test_a_hardware_fault_ends_the_episode_as_a_validity_error_not_the_systems_failure(tmp_path):
    run_dir = tmp_path / "run"
    proc = _launch_real_with_fakes(["episodes:=2", "deadline_s:=30", "service_timeout_s:=10", "record:=false",
                                    f"output_dir:={run_dir}"],
                                   {"FAKE_COMPLETE": "1", "FAKE_ARM_FAULT": "0", "FAKE_ARM_LATE": "1"},
                                   arm="fake_arm_fault.py")
    try:
        assert proc.popen.wait(timeout=240) == 3, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    summary = read_summary(run_dir)
    rows = summary["per_episode"]
    # The arm's reflex ends episode 0 as an evaluation-validity error with its cause; episode 1 runs.
    assert [(r["reason"], r["status"]) for r in rows] == [("error", "error"), ("completed", "ok")], rows
    assert rows[0]["error"] == "hardware_fault: robot error: joint_reflex (robot mode reflex)"
    assert rows[0].get("scores") is None
    out = "\n".join(proc.seen)
    assert "hardware_fault: robot error: joint_reflex" in out and "[hardware_fault]" in out, out[-2000:]
    # The tested system's rows too late for the arm in episode 1: its own event, the episode scored.
    assert rows[0]["system_events"] == []
    assert [e["kind"] for e in rows[1]["system_events"]] == ["late_rows"], rows[1]
    assert rows[1]["system_events"][0]["cause"].startswith("a row came late or after a gap")
    assert rows[1]["system_events"][0]["row_age_s"] == 0.45  # how late the refused row came
    assert summary["overall"]["error_kinds"] == {"hardware_fault": 1}
    assert "[late_rows]" in out, out[-2000:]


@pytest.mark.slow
def test_the_real_arm_bridge_turns_a_reflex_and_stalled_joint_states_into_hardware_faults(tmp_path):
    # The real launch with its real franka_arm_bridge against franka_standin (franka_ros2's robot
    # PC, started in the gripper bridge's place to share the launch's domain), the sensing and
    # scoring nodes stood in: a reflex one second into episode 0 and joint
    # states that stop one second into episode 2 each end that episode as a hardware fault;
    # episode 1, the arm recovered, completes. (joint_state_timeout_s 2: this shared machine
    # stalls processes for longer than franka_ros2's 0.25 s.)
    run_dir = tmp_path / "run"
    proc = _launch_real_with_fakes(["episodes:=3", "deadline_s:=30", "service_timeout_s:=10", "record:=false",
                                    "joint_state_timeout_s:=2.0", f"output_dir:={run_dir}"],
                                   {"FAKE_COMPLETE": "1", "FAKE_ARM_FAULTS": "0:reflex,2:stall"}, arm=None,
                                   gripper="fake_robot_pc.py")
    try:
        assert proc.popen.wait(timeout=400) == 3, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    rows = read_summary(run_dir)["per_episode"]
    assert [(r["reason"], r["status"]) for r in rows] == [("error", "error"), ("completed", "ok"),
                                                          ("error", "error")], [r.get("error") for r in rows]
    assert rows[0]["error"].startswith("hardware_fault: robot error: joint_reflex")
    assert rows[2]["error"].startswith("hardware_fault: joint states stale")
    # After each episode, faulted ones too once the arm was recovered, it is lifted clear and homed.
    for row in rows:
        steps = _operator_log(run_dir / "episodes" / row["episode_id"] / "operator.jsonl")
        assert [(e["action"], e["detail"]) for e in steps if e["kind"] == "arm"] == [("lift", "done"),
                                                                                     ("home", "done")], steps


def test_a_scene_never_set_up_leaves_the_episode_unscored_with_the_reason(tmp_path):
    run_dir = tmp_path / "run"
    proc = _launch_real_with_fakes(["episodes:=1", "setup_timeout_s:=2", "service_timeout_s:=10", "record:=false",
                                    f"output_dir:={run_dir}"],
                                   {"FAKE_SETUP_REFUSALS": "1000"})
    try:
        assert proc.popen.wait(timeout=240) == 3, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    rows = read_summary(run_dir)["per_episode"]
    assert rows[0]["status"] == "error"
    assert "scene set-up refused: not set up within 2 s" in rows[0]["error"]
    assert "std_10: marker not seen" in rows[0]["error"]


def test_a_scene_check_whose_reply_is_lost_is_asked_again_and_the_episode_runs(tmp_path):
    """The scene check is idempotent: a reply that never comes (Fast DDS dropped it)
    is asked again within setup_timeout_s instead of ending the episode."""
    run_dir = tmp_path / "run"
    proc = _launch_real_with_fakes(["episodes:=1", "deadline_s:=30", "service_timeout_s:=6", "record:=false",
                                    f"output_dir:={run_dir}"],
                                   {"FAKE_COMPLETE": "0", "FAKE_SETUP_SILENT_S": "9"})
    try:
        assert proc.popen.wait(timeout=240) == 0, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    out = "\n".join(proc.seen)
    assert [line.split("#")[-1] for line in proc.seen if "scene check 0000_" in line] == ["1", "2"], out
    assert "did not answer within 6 s; asking the scene check again" in out
    rows = read_summary(run_dir)["per_episode"]
    assert [(r["reason"], r["status"]) for r in rows] == [("completed", "ok")]


def _operator(step, *args):
    import os
    import subprocess
    import sys

    labference = os.path.join(os.path.dirname(sys.executable), "labference")
    return subprocess.run([labference, "operator", step, "--timeout", "60", *args], capture_output=True,
                          text=True, timeout=120)


def _operator_log(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _wait_for_text(proc, text, timeout):
    """The launch's lines holding `text`, read until one comes or the timeout."""
    deadline = time.monotonic() + timeout
    while not any(text in line for line in proc.seen) and time.monotonic() < deadline:
        if proc.popen.poll() is not None and proc.lines.empty():
            break
        proc.wait_for("\0", timeout=0.5)  # reads what comes meanwhile (no line starts with NUL)
    return [line for line in proc.seen if text in line]


def _printed(proc, node):
    return [line.split("] ", 1)[1] for line in proc.seen if line.startswith(f"[{node}] ")]


@pytest.mark.slow
def test_an_episode_starts_only_once_the_operator_confirmed_and_a_held_object_is_released_at_its_end(tmp_path):
    """The real launch with confirm:=operator, its real hand and arm bridges against franka_standin
    (franka_ros2's robot PC, started in the marker tracker's place to share the launch's domain, its arm
    away from home): the arm is homed before the first episode, with no reflex. A confirmation before
    the scene matches is refused; once it matches the runner waits for `labference operator confirm`,
    records it with its times, and starts the episode after it. The operator pauses and resumes the
    running episode (`labference operator pause|resume`, passed on to the policy bridge), the stand-in
    system stops once resumed, still holding what it grasped: the hand is opened before the session
    ends, then the arm is lifted clear and homed, and the interventions, the homings, the release and
    the lift are in the records with their times. (joint_state_timeout_s 2: this shared machine
    stalls processes for longer than franka_ros2's 0.25 s.)"""
    run_dir, scene_set_up = tmp_path / "run", tmp_path / "scene-set-up"
    proc = _launch_real_with_fakes(["episodes:=1", "deadline_s:=1000", "service_timeout_s:=20", "record:=false",
                                    "confirm:=operator", "setup_timeout_s:=200", "joint_state_timeout_s:=2.0",
                                    f"output_dir:={run_dir}"],
                                   {"FAKE_GRASP": "0", "FAKE_DONE_AFTER_RESUME": "0",
                                    "FAKE_SETUP_UNTIL_FILE": str(scene_set_up),
                                    "FAKE_ARM_START": "0.3,-0.4,0.2,-2.0,0.1,1.9,-0.5"},
                                   arm=None, gripper=None, tracker="fake_robot_pc.py")
    try:
        assert _wait_for_text(proc, "set the scene up as the instance says", 240), proc.seen[-20:]
        early = _operator("confirm", "--operator", "ana")
        assert early.returncode == 1 and "scene check has not passed" in early.stderr, early
        scene_set_up.touch()  # the operator sets the scene up
        assert _wait_for_text(proc, "confirm: labference operator confirm", 120), proc.seen[-20:]
        assert not _wait_for_text(proc, "referee start", 0), "started before the confirmation"
        confirmed = _operator("confirm", "--operator", "ana")
        assert confirmed.returncode == 0 and "confirmed: it starts now" in confirmed.stdout, confirmed
        paused = _operator("pause", "--operator", "ana", "--reason", "a hand in the cell")
        deadline = time.monotonic() + 120
        while paused.returncode == 1 and "no episode is running" in paused.stderr and time.monotonic() < deadline:
            paused = _operator("pause", "--operator", "ana", "--reason", "a hand in the cell")  # not started yet
        assert paused.returncode == 0 and "pause asked of the policy bridge" in paused.stdout, paused
        resumed = _operator("resume", "--operator", "ana")
        assert resumed.returncode == 0, resumed
        assert proc.popen.wait(timeout=240) == 0, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    eid = read_summary(run_dir)["per_episode"][0]["episode_id"]
    entries = _operator_log(run_dir / "episodes" / eid / "operator.jsonl")
    kinds = [e["kind"] for e in entries]
    assert kinds[:5] == ["scene_check_refused", "confirmation_refused", "scene_check_passed", "confirmation_asked",
                         "confirmed"], kinds
    assert [e["kind"] for e in entries if e["kind"] in ("pause", "resume")] == ["pause", "resume"], kinds
    pause, resume = (next(e for e in entries if e["kind"] == k) for k in ("pause", "resume"))
    assert pause["reason"] == "operator ana: a hand in the cell" and resume["reason"] == "operator ana"
    assert entries[4]["wall_time"] <= pause["wall_time"] <= resume["wall_time"]
    assert "intervention_failed" not in kinds
    # The policy bridge was asked, for this episode.
    assert [line.split(" ", 2)[:2] for line in _printed(proc, "policy_bridge") if line.startswith("bridge ")] == [
        ["bridge", "pause"], ["bridge", "resume"]]
    refused, confirmation = entries[1], entries[4]
    assert refused["operator"] == "ana" and confirmation["by"] == "operator" and confirmation["operator"] == "ana"
    assert entries[0]["wall_time"] <= refused["wall_time"] <= entries[2]["wall_time"] <= confirmation["wall_time"]
    # The referee was asked to start after the confirmation, not before.
    start = [float(line.rsplit(" ", 1)[1]) for line in _printed(proc, "referee") if line.startswith("referee start")]
    assert len(start) == 1 and start[0] >= confirmation["wall_time"], (start, confirmation)
    assert read_summary(run_dir)["per_episode"][0]["reason"] == "policy_stop"  # it stopped once resumed
    # The system held (a grasp to 3 cm) when the episode ended; the hand was then opened fully.
    hand = [line for line in _printed(proc, "fiducial_tracker") if line.startswith("hand ")]
    assert hand[0] == "hand homing" and "hand grasp 0.030" in hand, hand
    assert hand[-1] == "hand move 0.080" and hand.index("hand move 0.080") > hand.index("hand grasp 0.030"), hand
    assert [(e["action"], e["detail"]) for e in entries if e["kind"] == "hand"] == [("release", "done")], entries
    session = _operator_log(run_dir / "operator.jsonl")
    assert sorted((e["kind"], e["action"], e["detail"]) for e in session) == [("arm", "home", "done"),
                                                                              ("hand", "homing", "done")]
    # The arm: homed before the first episode's scene check, then, after the hand's release, lifted
    # clear and homed again before the run ended; three trajectories, no reflex on the way.
    homed = next(e for e in session if e["kind"] == "arm")
    assert homed["wall_time"] <= entries[0]["wall_time"], (homed, entries[0])
    after = [(e["kind"], e["action"], e["detail"]) for e in entries if e["kind"] in ("hand", "arm")]
    assert after == [("hand", "release", "done"), ("arm", "lift", "done"), ("arm", "home", "done")], entries
    arm = [line for line in _printed(proc, "fiducial_tracker") if line.startswith("arm ")]
    assert [line.split(" ")[1] for line in arm] == ["trajectory"] * 3, arm


def test_an_episode_never_confirmed_does_not_start_and_says_why(tmp_path):
    run_dir = tmp_path / "run"
    proc = _launch_real_with_fakes(["episodes:=1", "confirm:=operator", "setup_timeout_s:=2", "service_timeout_s:=10",
                                    "record:=false", f"output_dir:={run_dir}"], {})
    try:
        assert proc.popen.wait(timeout=240) == 3, "\n".join(proc.seen + proc.wait_for("\0", timeout=1))
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    assert not _wait_for_text(proc, "referee start", 0)
    row = read_summary(run_dir)["per_episode"][0]
    assert row["status"] == "error" and row["wall_s"] == 0
    assert row["error"] == "scene set-up refused: not confirmed within 2 s after the scene matched", row
    steps = _operator_log(run_dir / "episodes" / row["episode_id"] / "operator.jsonl")
    assert [s["kind"] for s in steps] == ["scene_check_passed", "confirmation_asked", "not_confirmed"]
    assert steps[2]["wall_time"] - steps[1]["wall_time"] >= 2.0
