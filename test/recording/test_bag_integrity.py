"""Compressed, grouped MCAP chunks: byte-exact round trip, the official reader's
view, rosbag2 metadata version 9 with type hashes; altered bytes refused
naming the chunk; a killed writer's bag read up to its last complete record
and rewritten closed."""
from __future__ import annotations

import pathlib
import shutil
import signal
import subprocess
import sys

import pytest
from ruamel.yaml import YAML

from labference_ros.recording.bag_reader import BagError, EpisodeBagReader
from labference_ros.recording.bag_writer import EpisodeBag, OfferedQos

PEERS = pathlib.Path(__file__).resolve().parents[1] / "peers"
sys.path.insert(0, str(PEERS))
from bag_samples import sample_stream  # noqa: E402

SECONDS = 3.0


def labference(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from labference_ros.cli.main import main; main()", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A closed bag of SECONDS of samples, and the messages as they were written."""
    path = tmp_path_factory.mktemp("bags") / "bag"
    sent = list(sample_stream(SECONDS))
    bag = EpisodeBag(path, {"episode_id": "ep_rt", "seeds": {"task": 1}})
    for topic, msgtype, t, data in sent:
        bag.add_topic(topic, msgtype, [OfferedQos()])
        bag.write(topic, t, data)
    bag.close(finish={"status": "finished"})
    return path, sent


def test_round_trip_is_byte_exact_and_in_log_time_order(written):
    path, sent = written
    back = list(EpisodeBagReader(path).raw_messages())
    assert [(t, ts, d) for t, _m, ts, d in back] == [(t, ts, d) for t, _m, ts, d in sent]
    images = [d for t, _m, _ts, d in back if t.endswith("image_raw")]
    assert len(images) == 3 * 10 * SECONDS and all(len(d) > 230_000 for d in images)


def test_chunks_are_zstd_and_cameras_never_share_a_chunk(written):
    from mcap.reader import make_reader

    path, sent = written
    raw_bytes = sum(len(d) for *_x, d in sent)
    mcap = path / "bag.mcap"
    with open(mcap, "rb") as f:
        summary = make_reader(f).get_summary()
    topic = {c.id: c.topic for c in summary.channels.values()}
    kinds = []
    for index in summary.chunk_indexes:
        assert index.compression == "zstd"
        kinds.append({topic[c] for c in index.message_index_offsets})
    camera_chunks = [k for k in kinds if any(t.startswith("/cameras/") for t in k)]
    assert camera_chunks and all(len(k) == 1 for k in camera_chunks)  # one camera per chunk, nothing else
    # The evaluator's topics (the audit's inputs) and the robot's streams never share a chunk either.
    assert {"/balance/reading"} in kinds and {"/balance/wrench"} in kinds
    assert len(kinds) == len(camera_chunks) + kinds.count({"/balance/reading"}) + kinds.count({"/balance/wrench"})
    # Lossless and smaller than the raw frames (the figure per episode is in BENCHMARKS.md).
    assert mcap.stat().st_size < raw_bytes / 2


def test_official_mcap_reader_and_project_reader_agree_on_counts(written):
    from mcap.reader import make_reader

    path, _sent = written
    official: dict[str, int] = {}
    with open(path / "bag.mcap", "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        for _schema, channel, _message in reader.iter_messages():
            official[channel.topic] = official.get(channel.topic, 0) + 1
        stats = reader.get_summary().statistics
    ours: dict[str, int] = {}
    for topic, _m, _t, _d in EpisodeBagReader(path).raw_messages():
        ours[topic] = ours.get(topic, 0) + 1
    meta = YAML(typ="safe").load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    listed = {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]}
    assert official == ours == listed and stats.message_count == sum(ours.values()) == meta["message_count"]


def test_rosbag2_metadata_version_9_and_type_hashes(written):
    from mcap.reader import make_reader

    from labference_ros.recording.topics import typestore

    path, _sent = written
    meta = YAML(typ="safe").load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == "mcap" and meta["ros_distro"] == "kilted"
    assert meta["relative_file_paths"] == ["bag.mcap"] and meta["files"][0]["path"] == "bag.mcap"
    assert meta["custom_data"]["labference.episode_id"] == "ep_rt"
    with open(path / "bag.mcap", "rb") as f:
        summary = make_reader(f).get_summary()
    channel_hash = {c.topic: c.metadata["topic_type_hash"] for c in summary.channels.values()}
    for t in meta["topics_with_message_count"]:
        tm = t["topic_metadata"]
        assert tm["type_description_hash"].startswith("RIHS01_") and len(tm["type_description_hash"]) == 71
        assert tm["type_description_hash"] == channel_hash[tm["name"]] == typestore().hash_rihs01(tm["type"])
        assert tm["offered_qos_profiles"][0]["reliability"] == "reliable"
    assert {s.name for s in summary.schemas.values()} == {"sensor_msgs/msg/Image", "labference/msg/BalanceReading",
                                                          "geometry_msgs/msg/WrenchStamped"}
    assert all(s.encoding == "ros2msg" for s in summary.schemas.values())


def test_reading_the_audit_topics_decompresses_no_image_chunk_and_no_robot_chunk(written, monkeypatch):
    from mcap.reader import make_reader

    from labference_ros.recording import mcap_recover

    path, _sent = written
    read_at = []
    original = mcap_recover._read_chunk_at

    def spy(f, offset):
        read_at.append(offset)
        return original(f, offset)

    monkeypatch.setattr(mcap_recover, "_read_chunk_at", spy)
    got = list(EpisodeBagReader(path).raw_messages({"/balance/reading"}))
    assert len(got) == 50 * SECONDS and read_at
    with open(path / "bag.mcap", "rb") as f:
        summary = make_reader(f).get_summary()
    topics = {c.id: c.topic for c in summary.channels.values()}
    chunk_topics = {i.chunk_start_offset: {topics[c] for c in i.message_index_offsets} for i in summary.chunk_indexes}
    assert all(chunk_topics[offset] == {"/balance/reading"} for offset in read_at)  # no frame, no wrench


def test_every_topic_the_audit_reads_chunks_with_the_evaluation_alone():
    from labference_ros.recording.bag_writer import chunk_group
    from labference_ros.recording.replay import AUDITED_TOPICS

    assert {chunk_group(t) for t in AUDITED_TOPICS} == {"evaluator"}
    robot = ("/clock", "/joint_states", "/balance/wrench", "/panda_arm_controller/joint_trajectory", "/tf")
    assert {chunk_group(t) for t in robot} == {"default"}
    assert chunk_group("/cameras/front/image_raw") == "camera:front"


def _flip_byte_in_chunk(src: pathlib.Path, dst: pathlib.Path, nth_chunk: int) -> int:
    from mcap.reader import make_reader

    shutil.copytree(src, dst)
    mcap = dst / "bag.mcap"
    with open(mcap, "rb") as f:
        index = make_reader(f).get_summary().chunk_indexes[nth_chunk]
    at = index.chunk_start_offset + index.chunk_length // 2
    with open(mcap, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x10]))
    return index.chunk_start_offset


def test_a_flipped_byte_inside_a_chunk_fails_the_audit_naming_the_chunk(written, tmp_path):
    path, _sent = written
    offset = _flip_byte_in_chunk(path, tmp_path / "bag", 2)
    with pytest.raises(BagError, match=rf"chunk 2 at byte {offset} \(/cameras/\w+/image_raw\).*altered"):
        EpisodeBagReader(tmp_path / "bag")
    res = labference("audit", str(tmp_path / "bag"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"chunk 2 at byte {offset}" in res.stdout and "altered" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr


def _killed_writer(bag: pathlib.Path, after_s: int) -> None:
    proc = subprocess.Popen([sys.executable, str(PEERS / "bag_writer_peer.py"), str(bag), "6"],
                            stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.strip() in (f"AT {after_s}", "HOLD"):
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("after_s", [0, 3])
def test_a_killed_writers_bag_reads_to_its_last_complete_record_and_is_rewritten_closed(tmp_path, after_s):
    bag = tmp_path / "ep" / "bag"
    _killed_writer(bag, after_s)
    assert not (bag / "metadata.yaml").exists()
    reader = EpisodeBagReader(bag)
    assert "truncated but readable" in reader.truncated and reader.custom["episode_id"] == "ep_killed"
    back = list(reader.raw_messages())
    sent = list(sample_stream(6.0))
    # What was read is exactly what was written, a prefix per topic (chunks close per group).
    for topic in {t for t, *_ in sent}:
        mine = [(ts, d) for t, _m, ts, d in back if t == topic]
        assert mine == [(ts, d) for t, _m, ts, d in sent if t == topic][:len(mine)]
    if after_s:
        assert len(back) > 100  # whole seconds of recording survived
    res = labference("recover-bag", str(bag))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "closed bag written" in res.stdout and (tmp_path / "ep" / "bag.unclosed" / "bag.mcap").exists()
    closed = EpisodeBagReader(bag)
    assert closed.truncated == "" and list(closed.raw_messages()) == back
    assert '"status": "recovered"' in closed.custom["finish"]
    assert labference("recover-bag", str(bag)).returncode == 2  # a closed bag has nothing to recover


def test_a_bag_cut_inside_a_chunk_names_what_was_lost(written, tmp_path):
    path, _sent = written
    shutil.copytree(path, tmp_path / "bag")
    mcap = tmp_path / "bag" / "bag.mcap"
    (tmp_path / "bag" / "metadata.yaml").unlink()
    with open(mcap, "r+b") as f:
        f.truncate(mcap.stat().st_size // 2)
    reader = EpisodeBagReader(tmp_path / "bag")
    assert "truncated but readable" in reader.truncated and "chunk record at byte" in reader.truncated
    assert len(list(reader.raw_messages())) > 0


def _audit_says_altered(bag: pathlib.Path) -> str:
    res = labference("audit", str(bag))
    out = res.stdout + res.stderr
    assert res.returncode == 2 and "ALTERED" in res.stdout, out
    assert "Traceback" not in out
    return res.stdout


def test_a_closed_bag_cut_by_a_third_is_altered_naming_the_missing_messages(written, tmp_path):
    """metadata.yaml says the recorder closed the bag: a file without its end was cut
    afterwards, not left by a killed recorder, and the audit refuses it (exit 2)."""
    path, sent = written
    shutil.copytree(path, tmp_path / "bag")
    mcap = tmp_path / "bag" / "bag.mcap"
    size = mcap.stat().st_size
    with open(mcap, "r+b") as f:
        f.truncate(size * 2 // 3)
    with pytest.raises(BagError, match=r"recorder closed this bag with \d+ messages.*missing \d+ messages \(") as exc:
        EpisodeBagReader(tmp_path / "bag")
    text = str(exc.value)
    assert f"truncated at byte {size * 2 // 3}" in text
    missing = int(text.split("missing ")[1].split()[0])
    assert 0 < missing < len(sent)
    # A camera's topic is named with what the file still holds of what was recorded.
    assert " of 30" in text and "/cameras/" in text
    out = _audit_says_altered(tmp_path / "bag")
    assert f"missing {missing} messages" in out


@pytest.mark.parametrize("where", ["middle", "summary"])
def test_a_closed_bag_with_a_few_kilobytes_overwritten_is_altered(written, tmp_path, where):
    path, _sent = written
    shutil.copytree(path, tmp_path / "bag")
    mcap = tmp_path / "bag" / "bag.mcap"
    size = mcap.stat().st_size
    at = size // 2 if where == "middle" else size - 3000
    with open(mcap, "r+b") as f:
        f.seek(at)
        f.write(bytes(range(256)) * 12)  # 3 kB
    with pytest.raises(BagError, match="altered|cut or overwritten"):
        EpisodeBagReader(tmp_path / "bag")
    _audit_says_altered(tmp_path / "bag")


def test_a_closed_bag_whose_file_holds_other_counts_than_its_metadata_is_altered(written, tmp_path):
    path, _sent = written
    shutil.copytree(path, tmp_path / "bag")
    meta_path = tmp_path / "bag" / "metadata.yaml"
    yaml = YAML(typ="safe")
    meta = yaml.load(meta_path.read_text())
    topic = meta["rosbag2_bagfile_information"]["topics_with_message_count"][0]
    topic["message_count"] += 5
    with open(meta_path, "w") as f:
        yaml.dump(meta, f)
    name = topic["topic_metadata"]["name"]
    with pytest.raises(BagError, match=rf"missing 5 messages \({name} \d+ of \d+\).*altered"):
        EpisodeBagReader(tmp_path / "bag")
