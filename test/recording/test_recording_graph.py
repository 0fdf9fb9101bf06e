"""lab_sim + balance + referee + recorder as processes, three recorded episodes
(correct transfer, dropped weight, wrong selection) driven through the ROS
interfaces; then the replay audit, videos and demonstrations from those bags."""
from __future__ import annotations

import json
import pathlib
import shutil
import struct
import subprocess
import sys

import h5py
import pytest

from labference_ros.rosenv import loopback_environ
from bag_edit import tampered_copy
from ros_domains import own_domain
from rosproc import Proc

REPO = pathlib.Path(__file__).resolve().parents[2]
DRIVER = REPO / "test" / "peers" / "weighing_driver.py"
PROBE = REPO / "test" / "peers" / "recorder_probe.py"
MODES = ("correct", "drop", "wrong")


def labference(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from labference_ros.cli.main import main; main()", *args],
                          capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def ros_env():
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        yield env


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory, ros_env):
    """A run dir with one recorded episode per mode, and each driver's scores."""
    run = tmp_path_factory.mktemp("run")
    procs = [Proc([sys.executable, "-m", f"labference_ros.nodes.{name}"], env=ros_env)
             for name in ("lab_sim", "balance", "referee", "recorder")]
    scores = {}
    try:
        for mode in MODES:
            driver = Proc([sys.executable, str(DRIVER), mode, str(run / mode), "3", "--record",
                           "--episode", f"ep_{mode}"], env=ros_env)
            lines = driver.wait_for("SCORES", timeout=400)
            driver.stop()
            assert lines, driver.seen[-30:]
            result = json.loads(lines[0][len("SCORES "):])
            scores[mode] = result["scores"]
            if mode == "correct":
                assert result["chosen"] == result["required"]
        for p in procs:
            assert p.popen.poll() is None, f"a node died: {p.seen[-20:]}"
    finally:
        for p in procs:
            p.stop()
    return run, scores


@pytest.mark.slow
def test_episodes_are_the_intended_outcomes(recorded_run):
    """The referee scores what physically happened: a correct transfer is chosen right,
    executed and complete; a dropped one chosen right and not executed; a wrong weight
    chosen wrong and executed."""
    from labference_ros.core.records import read_jsonl

    run, s = recorded_run
    triple = {mode: (s[mode]["first_choice_correct"], s[mode]["executed"], s[mode]["physically_complete"])
              for mode in MODES}
    assert triple == {"correct": (True, True, True), "drop": (True, False, False), "wrong": (False, True, False)}
    assert s["correct"]["completion_class"] == "clean" and s["correct"]["terminal_dwell_s"] >= 3.0
    # The records on disk agree with the service reply and are valid JSONL with unique ids.
    on_disk = json.loads((run / "correct" / "scores.json").read_text())
    assert on_disk["physically_complete"] is True and on_disk["status"] == "final"
    events = [r for r in read_jsonl(run / "correct" / "events.jsonl") if r["record"] == "event"]
    ids = [e["event_id"] for e in events]
    assert len(ids) == len(set(ids)) and "task_complete" in {e["category"] for e in events}


@pytest.mark.slow
def test_audit_agrees_with_online_scores_for_every_episode(recorded_run):
    run, _ = recorded_run
    res = labference("audit", str(run), "--jobs", "2")  # two episodes at once, same report
    assert res.returncode == 0, res.stdout + res.stderr
    for mode in MODES:
        assert f"ep_{mode}: agree" in res.stdout
    # The multi-episode table lists each episode once.
    table = res.stdout.split("\n\n")[-1].splitlines()
    assert table[0].split()[:2] == ["episode", "result"] and len(table) == 1 + len(MODES)


@pytest.mark.slow
def test_tampered_event_field_is_reported_with_event_id_and_field(recorded_run, tmp_path):
    run, _ = recorded_run
    ep = tmp_path / "correct"
    shutil.copytree(run / "correct", ep)
    lines = (ep / "events.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        r = json.loads(line)
        if r.get("category") == "choice":
            r["detail"]["correct"] = not r["detail"]["correct"]
            lines[i], target = json.dumps(r), r["event_id"]
            break
    (ep / "events.jsonl").write_text("\n".join(lines) + "\n")
    res = labference("audit", str(ep))
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"event {target} (choice) field detail.correct" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr


@pytest.mark.slow
def test_tampered_final_score_is_reported(recorded_run, tmp_path):
    run, _ = recorded_run
    ep = tmp_path / "wrong"
    shutil.copytree(run / "wrong", ep)
    scores = json.loads((ep / "scores.json").read_text())
    scores["first_choice_correct"] = True
    (ep / "scores.json").write_text(json.dumps(scores))
    res = labference("audit", str(ep))
    assert res.returncode == 1 and "scores.json: final scores field first_choice_correct" in res.stdout


@pytest.mark.slow
def test_a_killed_recorders_unclosed_bag_is_audited_up_to_where_it_ends(recorded_run, tmp_path):
    """No metadata.yaml and no footer: what a killed recorder leaves. The audit
    compares what the bag holds and says partial (exit 3), never plain agree."""
    run, _ = recorded_run
    ep = tmp_path / "drop"
    shutil.copytree(run / "drop", ep)
    (ep / "bag" / "metadata.yaml").unlink()
    mcap = next((ep / "bag").glob("*.mcap"))
    size = mcap.stat().st_size
    with open(mcap, "r+b") as f:
        f.truncate(size // 2)
    res = labference("audit", str(ep))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "partial: agrees as far as the evidence goes" in res.stdout and "truncated but readable" in res.stdout
    assert str(mcap) in res.stdout and f"truncated at byte {size // 2}" in res.stdout
    assert "are not compared: the bag lacks them" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr


@pytest.mark.slow
def test_a_closed_bag_cut_by_a_third_is_altered(recorded_run, tmp_path):
    run, _ = recorded_run
    ep = tmp_path / "drop"
    shutil.copytree(run / "drop", ep)
    mcap = next((ep / "bag").glob("*.mcap"))
    with open(mcap, "r+b") as f:
        f.truncate(mcap.stat().st_size * 2 // 3)
    res = labference("audit", str(ep))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "ALTERED" in res.stdout and "/evaluator/world_state" in res.stdout and "missing" in res.stdout


def _cdr_stamp_s(data: bytes) -> float:
    sec, nanosec = struct.unpack_from("<iI", data, 4)
    return sec + nanosec * 1e-9


@pytest.mark.slow
def test_an_interrupted_bag_whose_readings_end_first_is_compared_up_to_its_last_reading(recorded_run, tmp_path):
    """A recording that stops between a world state and the reading of its instant
    (readings reach the recorder later, through the balance): the audit's horizon is
    the last instant the bag holds both, so nothing is scored without its reading."""
    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    worlds = [(t, _cdr_stamp_s(d)) for topic, _m, t, d in EpisodeBagReader(run / "drop" / "bag").raw_messages()
              if topic == "/evaluator/world_state"]
    cut_log_time, cut_sim = worlds[len(worlds) * 3 // 5]
    readings_until = cut_sim - 0.2  # the bag's readings end 0.2 s of sim before its world states

    def edit(topic, _msgtype, t, data):
        if t > cut_log_time:
            return None
        if topic == "/balance/reading" and _cdr_stamp_s(data) > readings_until:
            return None
        return data

    ep = tampered_copy(run / "drop", tmp_path / "drop", edit,
                       custom={"finish": json.dumps({"status": "recorder_shutdown", "reason": "recorder_shutdown"})})
    res = labference("audit", str(ep))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "partial: agrees as far as the evidence goes" in res.stdout
    assert "finish status is recorder_shutdown" in res.stdout
    horizon = float(res.stdout.split("records from t=")[1].split()[0])
    assert horizon <= readings_until + 1e-6


@pytest.mark.slow
def test_each_episodes_bag_holds_only_its_own_latched_samples(recorded_run):
    """lab_sim publishes the tare and its layout's static frames once per reset; each
    bag holds exactly those of its own episode, none carried over from the one before
    (they used to open the next bag, stamped 0.0, before the episode's own)."""
    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    for mode in MODES:
        latched = [(topic, data) for topic, _m, _t, data in EpisodeBagReader(run / mode / "bag").raw_messages(
            {"/balance/tare", "/tf_static"})]
        assert [topic for topic, _ in latched].count("/balance/tare") == 1, (mode, latched)
        assert [topic for topic, _ in latched].count("/tf_static") == 1, (mode, [t for t, _ in latched])


@pytest.mark.slow
def test_each_bag_carries_the_recorders_tally_of_what_it_wrote(recorded_run):
    """Per periodic topic, expected (the instants of its period between its first and
    last stamp) against recorded; what the bag holds is what the tally says was recorded."""
    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    for mode in MODES:
        reader = EpisodeBagReader(run / mode / "bag")
        tally = json.loads(reader.custom["completeness"])
        held: dict[str, int] = {}
        for topic, *_rest in reader.raw_messages(set(tally)):
            held[topic] = held.get(topic, 0) + 1
        for topic in ("/evaluator/world_state", "/balance/reading", "/joint_states", "/cameras/front/image_raw"):
            row = tally[topic]
            assert row["expected"] > 0 and row["period_s"] > 0, (mode, topic, row)
            # Every message of the episode's timeline (the bag may also hold the tail
            # of the timeline before the reset, which the tally leaves out).
            assert 0 < row["recorded"] <= held[topic], (mode, topic, row, held[topic])
            assert row["expected"] == row["recorded"] + row["missing"]
        # The audit's inputs arrive whole (transient local, deep queues): nothing missing.
        assert tally["/evaluator/world_state"]["missing"] == 0 and tally["/balance/reading"]["missing"] == 0


@pytest.mark.slow
def test_an_injected_gap_is_reported_per_topic_and_keeps_the_audit_from_agreeing(recorded_run, tmp_path):
    """Three joint states and two world states dropped, the tally saying so: the audit
    names both gaps and, as a scored input is missing, says partial (or disagrees)."""
    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    reader = EpisodeBagReader(run / "correct" / "bag")
    tally = json.loads(reader.custom["completeness"])
    dropped = {"/joint_states": 3, "/evaluator/world_state": 2}
    seen: dict[str, int] = {}

    def edit(topic, _msgtype, _t, data):
        seen[topic] = seen.get(topic, 0) + 1
        if topic in dropped and 10 < seen[topic] <= 10 + dropped[topic]:
            return None
        return data

    for topic, n in dropped.items():
        tally[topic] = {**tally[topic], "recorded": tally[topic]["recorded"] - n, "missing": n}
    ep = tampered_copy(run / "correct", tmp_path / "correct", edit, custom={"completeness": json.dumps(tally)})
    res = labference("audit", str(ep))
    assert res.returncode in (1, 3), res.stdout + res.stderr
    expected_js, expected_ws = tally["/joint_states"]["expected"], tally["/evaluator/world_state"]["expected"]
    assert (f"recorder gaps: /evaluator/world_state 2 of {expected_ws} missing, /joint_states 3 of "
            f"{expected_js} missing") in res.stdout, res.stdout
    assert "agree" not in res.stdout.split("\n")[0] or "partial" in res.stdout.split("\n")[0]


@pytest.mark.slow
def test_deliveries_a_closed_bag_lacks_make_the_audit_partial_up_to_the_first_of_them(recorded_run, tmp_path):
    """The recorder closed the bag without the bridge's receipt of the last delivery (its
    finish names it): the audit compares up to it and says partial, naming the cause,
    never DISAGREE over evidence the bag could not hold."""
    from rclpy.serialization import deserialize_message

    from labference.msg import DeliveryReceipt
    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    reader = EpisodeBagReader(run / "correct" / "bag")
    delivered = [m.payload_id for topic, _t, m in reader.messages({"/policy/receipts"})
                 if m.kind == "observation" and m.status == "delivered"]
    assert delivered, "the recorded episode has no delivery"
    missing = delivered[-1:]

    def edit(topic, _msgtype, _t, data):
        if topic == "/policy/receipts" and deserialize_message(data, DeliveryReceipt).payload_id in missing:
            return None
        return data

    finish = {**json.loads(reader.custom["finish"]), "undelivered": missing}
    ep = tampered_copy(run / "correct", tmp_path / "correct", edit, custom={"finish": json.dumps(finish)})
    res = labference("audit", str(ep))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "partial" in res.stdout.split("\n")[0], res.stdout
    assert f"without the bridge's receipts of deliveries the referee acknowledged (1, the first {missing[0]})" \
        in res.stdout, res.stdout


@pytest.mark.slow
def test_bag_contents_offered_qos_and_identity(recorded_run):
    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    reader = EpisodeBagReader(run / "correct" / "bag")
    topics = reader.topics()
    for topic in ("/clock", "/joint_states", "/balance/wrench", "/balance/tare", "/balance/reading",
                  "/evaluator/world_state", "/referee/events", "/referee/legal_set", "/referee/opportunities",
                  "/referee/scores", "/referee/receipts", "/policy/receipts", "/policy/action_chunks",
                  "/panda_arm_controller/joint_trajectory", "/panda_gripper/command",
                  "/cameras/front/image_raw", "/cameras/wrist/camera_info", "/cameras/display/image_raw"):
        assert topic in topics, topic
    info = reader.metadata["rosbag2_bagfile_information"]
    assert info["storage_identifier"] == "mcap" and info["version"] == 9
    # The rosbag2 fields `ros2 bag info` reads.
    assert info["duration"]["nanoseconds"] > 0 and info["starting_time"]["nanoseconds_since_epoch"] > 0
    assert info["message_count"] == sum(t["message_count"] for t in info["topics_with_message_count"])
    assert info["files"] and info["files"][0]["path"].endswith(".mcap")
    assert all(t["topic_metadata"]["serialization_format"] == "cdr" and t["topic_metadata"]["type"]
               for t in info["topics_with_message_count"])
    tare = next(t for t in info["topics_with_message_count"] if t["topic_metadata"]["name"] == "/balance/tare")
    assert tare["topic_metadata"]["offered_qos_profiles"][0]["durability"] == "transient_local"
    c = reader.custom
    assert c["episode_id"] == "ep_correct" and c["instance_id"] and len(c["contract_hash"]) == 64
    assert json.loads(c["seeds"])["layout"] == 3 and c["system"] == "test_driver_correct"
    assert json.loads(c["finish"])["status"] == "finished"
    # Every message reads back, and the counts match metadata.yaml and the official MCAP reader's.
    from mcap.reader import make_reader

    counts = {}
    for topic, _t, _msg in reader.messages():
        counts[topic] = counts.get(topic, 0) + 1
    assert counts == {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]}
    official = {}
    with open(reader.mcap, "rb") as f:
        mcap_reader = make_reader(f, validate_crcs=True)
        for _schema, channel, _message in mcap_reader.iter_messages():
            official[channel.topic] = official.get(channel.topic, 0) + 1
        channels = mcap_reader.get_summary().channels.values()
    assert official == counts
    # rosbag2 version 9 fields: the distribution, and each channel's type hash as rosbag2 writes it.
    assert info["ros_distro"] == "kilted"
    hashes = {t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"]
              for t in info["topics_with_message_count"]}
    assert {c.topic: c.metadata["topic_type_hash"] for c in channels} == hashes
    assert all(h.startswith("RIHS01_") and len(h) == 71 for h in hashes.values())


@pytest.mark.slow
def test_bag_reads_back_with_rclpy_serialization_and_type_hashes_match(recorded_run, ros_env):
    run, _ = recorded_run
    probe = Proc([sys.executable, str(PROBE), "hashes", str(run / "wrong" / "bag")], env=ros_env)
    try:
        assert probe.wait_for("DONE", timeout=120), probe.seen[-20:]
    finally:
        probe.stop()
    hashes = [line.split() for line in probe.seen if line.startswith("HASH")]
    deser = [line.split() for line in probe.seen if line.startswith("DESER")]
    assert len(hashes) >= 20 and all(h[2] == h[3] for h in hashes), hashes
    assert len(deser) == len(hashes) and all(d[2] == "ok" for d in deser), deser


@pytest.mark.slow
def test_videos_per_camera_with_episode_id_and_frames(recorded_run, tmp_path):
    import imageio.v3 as iio

    from labference_ros.recording.bag_reader import EpisodeBagReader

    run, _ = recorded_run
    frames = {t["topic_metadata"]["name"]: t["message_count"] for t in EpisodeBagReader(run / "drop" / "bag")
              .metadata["rosbag2_bagfile_information"]["topics_with_message_count"]}
    for cam in ("front", "wrist", "display"):
        video = run / "drop" / "videos" / f"ep_drop_{cam}.mp4"  # written by the recorder on finish
        assert video.exists()
        n = sum(1 for _ in iio.imiter(video))
        assert n == frames[f"/cameras/{cam}/image_raw"] > 50
    # The CLI rewrites them from the bag alone.
    res = labference("videos", str(run / "drop" / "bag"), "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.glob("*.mp4")) == [f"ep_drop_{c}.mp4" for c in ("display", "front", "wrist")]


@pytest.mark.slow
def test_demonstrations_hdf5_manifest_and_training_index(recorded_run, tmp_path):
    run, _ = recorded_run
    res = labference("demos-from-bags", str(run), "--out", str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    manifest = json.loads((tmp_path / "collection_manifest.json").read_text())
    outcomes = {a["episode_id"]: (a["outcome"], a["accepted"], a["audit"]) for a in manifest["attempts"]}
    assert outcomes == {"ep_correct": ("success", True, "agree"), "ep_drop": ("failed", False, "agree"),
                        "ep_wrong": ("failed", False, "agree")}
    index = json.loads((tmp_path / "training_index.json").read_text())
    assert "valid_complete" in index["acceptance_rule"] and "sha256" in index["split_rule"]
    assert [e["episode_id"] for e in index["episodes"]] == ["ep_correct"]
    assert index["episodes"][0]["split"] in ("train", "val") and len(index["rejected"]) == 2
    with h5py.File(tmp_path / "demonstrations.hdf5") as f:
        assert set(f["episodes"]) == set(f["diagnostics"]) == {"ep_correct", "ep_drop", "ep_wrong"}
        g = f["episodes/ep_drop"]
        k = g["observation/t"].shape[0]
        assert g["action/arm_joint_positions"].shape == (k - 1, 7) and g["control_mask"].shape == (k - 1,)
        for cam in ("front", "wrist", "display"):
            assert g[f"observation/images/{cam}"].shape[0] == k == g[f"observation/image_stamps/{cam}"].shape[0]
        assert g.attrs["control_frequency_hz"] > 0 and "rad" in json.loads(g.attrs["action_units"])["arm_joint_positions"]
        mask = g["control_mask"][:]
        assert mask[0] == 0 and mask.max() == 1  # settling is environment-controlled, then the system acts
        assert g.attrs["start_t"] < g.attrs["end_t"]
        # Evaluator-only values stay in the diagnostics group.
        assert "sample_mass_g" not in g.attrs and f["diagnostics/ep_drop"].attrs["sample_mass_g"] > 0
        assert json.loads(f["diagnostics/ep_drop/scores_json"][()])["executed"] is False


@pytest.mark.slow
def test_sigterm_closes_the_bag_cleanly(tmp_path, ros_env):
    with own_domain() as domain:  # away from the module's recorded graph
        env = dict(ros_env, ROS_DOMAIN_ID=domain)
        recorder = Proc([sys.executable, "-m", "labference_ros.nodes.recorder"], env=env)
        probe = None
        try:
            probe = Proc([sys.executable, str(PROBE), "start", str(tmp_path / "ep")], env=env)
            assert probe.wait_for("STARTED", timeout=90) == ["STARTED True"], probe.seen
            assert probe.popen.wait(timeout=30) == 0, probe.seen  # a clean exit: see record_probe_episode
        finally:
            if probe is not None:
                probe.stop()
            code = recorder.stop()
            recorder.wait_for("", count=10**6, timeout=2)
            assert code == 0, "\n".join(recorder.seen[-40:])
    from labference_ros.recording.bag_reader import EpisodeBagReader

    reader = EpisodeBagReader(tmp_path / "ep" / "bag")
    assert json.loads(reader.custom["finish"])["status"] == "recorder_shutdown"


def record_probe_episode(tmp_path, ros_env, mode: str) -> tuple[list[str], list[str]]:
    """A recorder (no videos) records the episode a recorder_probe.py mode plays, on a
    domain of its own: (the bag's topic per message, everything the recorder logged)."""
    from labference_ros.recording.bag_reader import EpisodeBagReader

    with own_domain() as domain:
        env = dict(ros_env, ROS_DOMAIN_ID=domain)
        # match_timeout_s:=1.0: the probes start episodes before their writers exist.
        recorder = Proc([sys.executable, "-m", "labference_ros.nodes.recorder", "--ros-args", "-p",
                         "videos:=false", "-p", "match_timeout_s:=1.0"], env=env)
        probe = None
        try:
            probe = Proc([sys.executable, str(PROBE), mode, str(tmp_path / "ep")], env=env)
            assert probe.wait_for("FINISHED", timeout=120) == ["FINISHED True"], probe.seen
            # The probe ends by itself. Stopped by a signal it would die without leaving the DDS
            # domain: Fast DDS then regenerates the shared-memory ports it shared with the
            # recorder, and the recorder's teardown crashed on the old port (SIGSEGV, 6 runs in 80).
            assert probe.popen.wait(timeout=30) == 0, probe.seen
        finally:
            if probe is not None:
                probe.stop()
            code = recorder.stop()
            recorder.wait_for("", count=10**6, timeout=2)
            # A crash's faulthandler dump is in its output: printed whole (a list would be cut short).
            assert code == 0, "\n".join(recorder.seen[-40:])
    topics = [topic for topic, _type, _t, _raw in EpisodeBagReader(tmp_path / "ep" / "bag").raw_messages()]
    return topics, recorder.seen


@pytest.mark.slow
def test_a_world_state_sent_before_the_recorder_matched_is_in_the_bag(tmp_path, ros_env):
    # lab_sim's first state after a reset can leave before DDS has matched its writer
    # with the recorder's reader; the audit re-scores from it, so the bag must hold it.
    topics, log = record_probe_episode(tmp_path, ros_env, "first_world")
    assert topics.count("/evaluator/world_state") == 1, topics
    # The start waited for a world-state writer (none yet: the probe creates it after).
    assert any("starting before matching the publishers of" in line and "/evaluator/world_state" in line
               for line in log), log[-10:]


@pytest.mark.slow
def test_a_finish_waits_until_the_recording_has_caught_up(tmp_path, ros_env):
    # The runner's finish can overtake the last measurements on their way to the recorder;
    # it must wait for them (here 1.5 s, polled by a timer that ticks only while it waits).
    topics, log = record_probe_episode(tmp_path, ros_env, "late_world")
    assert topics.count("/evaluator/world_state") == 2, topics
    assert not any("before the recording caught up" in line for line in log), log[-10:]


@pytest.mark.slow
def test_a_finish_waits_for_every_delivery_the_referee_acknowledged(tmp_path, ros_env):
    # The audit re-scores from the bridge's delivery receipts: one the referee already
    # acknowledged must be in the bag (seen in CI: the last 2 s of deliveries missing from a
    # bag closed before they reached the recorder, and the audit disagreeing).
    topics, log = record_probe_episode(tmp_path, ros_env, "late_delivery")
    assert topics.count("/policy/receipts") == 2 and topics.count("/referee/receipts") == 2, topics
    assert not any("before the recording caught up" in line for line in log), log[-10:]


@pytest.mark.slow
def test_a_repeated_start_or_finish_gets_the_first_answer_and_one_bag(tmp_path, ros_env):
    # A caller whose reply Fast DDS dropped asks again: the bag under way is kept (not
    # superseded and refused as existing), and the finish's answer is the first one's.
    from labference_ros.recording.bag_reader import EpisodeBagReader

    topics, log = record_probe_episode(tmp_path, ros_env, "repeated")
    assert topics.count("/evaluator/world_state") == 1, topics
    answers = json.loads((tmp_path / "ep" / "answers.json").read_text())
    assert answers["start"] == [True, "already recording ep_repeat"]
    first = answers["finish"][0]
    assert first[0] is True and first[1].startswith("bag ") and answers["finish"] == [first] * 3
    reader = EpisodeBagReader(tmp_path / "ep" / "bag")
    assert json.loads(reader.custom["finish"])["status"] == "finished"


@pytest.mark.slow
def test_a_volatile_publisher_of_an_audited_topic_is_still_recorded(tmp_path, ros_env):
    # The recorder asks for transient local on the audit's topics; a node of another
    # graph publishing one volatile would never match it unless the recorder falls back.
    from rclpy.serialization import deserialize_message

    from labference.msg import BalanceReading
    from labference_ros.recording.bag_reader import EpisodeBagReader

    topics, log = record_probe_episode(tmp_path, ros_env, "volatile_reading")
    assert any("recording it volatile" in line for line in log), log[-10:]
    raw_g = [deserialize_message(bytes(raw), BalanceReading).raw_g
             for topic, _type, _t, raw in EpisodeBagReader(tmp_path / "ep" / "bag").raw_messages()
             if topic == "/balance/reading"]
    volatile = [g for g in raw_g if g < 1000]
    assert len(volatile) >= 10, raw_g  # the 4 s after the fallback (checked every second)
    # The durable publisher's samples reach both the first (transient-local) reader and the
    # volatile one that replaced it; each is recorded once.
    durable = [g for g in raw_g if g >= 1000]
    assert len(durable) >= 10 and len(set(durable)) == len(durable), raw_g


def _event(ep: pathlib.Path, category: str) -> dict:
    for line in (ep / "events.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["record"] == "event" and r["category"] == category:
            return r
    raise AssertionError(f"no {category} event")


def _stamp(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("tamper", ["none", "drop_stable_reading", "edit_terminal_reading", "delay_release"])
def test_tampering_inside_the_bag_makes_the_audit_fail_and_name_the_difference(recorded_run, tmp_path, tamper):
    from rclpy.serialization import deserialize_message, serialize_message

    from labference.msg import BalanceReading, WorldState

    run, _ = recorded_run
    src = run / "correct"
    stable_t = _event(src, "stable_reading")["t"]
    release = _event(src, "release")
    release_t, released = release["t"], release["object"]
    dwell_t = _event(src, "terminal_dwell_started")["t"]

    def edit(topic, msgtype, t, data):
        if topic == "/balance/reading":
            msg = deserialize_message(data, BalanceReading)
            if tamper == "drop_stable_reading" and abs(_stamp(msg) - stable_t) < 1e-6:
                return None
            if tamper == "edit_terminal_reading" and abs(_stamp(msg) - (dwell_t + 1.0)) < 1e-6:
                msg.displayed_g += 5.0
                msg.filtered_g += 5.0
                return serialize_message(msg)
        if topic == "/evaluator/world_state" and tamper == "delay_release":
            msg = deserialize_message(data, WorldState)
            if release_t - 0.2 <= _stamp(msg) < release_t + 0.3:
                for o in msg.objects:
                    if o.name == released:  # the fingers seem to hold it 0.3 s longer
                        o.contacts = sorted(set(o.contacts) | {"left_finger", "right_finger"})
                        o.left_finger_contact = o.right_finger_contact = True
                return serialize_message(msg)
        return data

    ep = tampered_copy(src, tmp_path / "ep", edit)
    res = labference("audit", str(ep / "bag"))
    if tamper == "none":  # control: the rewrite itself changes nothing the audit sees
        assert res.returncode == 0, res.stdout + res.stderr
        return
    assert res.returncode == 1, res.stdout + res.stderr
    assert "DISAGREE" in res.stdout and "field" in res.stdout and "online" in res.stdout and "audit" in res.stdout
