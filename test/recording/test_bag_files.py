"""Episode bags written and read without a graph: custom types, custom_data,
and clear errors for truncated or unclosed bags."""
from __future__ import annotations

import json
import struct

import pytest

from labference_ros.recording.bag_reader import BagError, EpisodeBagReader, scan_mcap
from labference_ros.recording.bag_writer import EpisodeBag, OfferedQos
from labference_ros.recording.topics import typestore


def write_bag(path, n=50):
    store = typestore()
    Time = store.types["builtin_interfaces/msg/Time"]
    Header = store.types["std_msgs/msg/Header"]
    Reading = store.types["labference/msg/BalanceReading"]
    bag = EpisodeBag(path, {"episode_id": "ep_x", "seeds": {"task": 1}})
    bag.add_topic("/balance/reading", "labference/msg/BalanceReading", [OfferedQos(durability=2)])
    for i in range(n):
        msg = Reading(Header(Time(i, 0), "pan"), 1.0 * i, 1.0, 1.0, True, False, True, "", "sim" * 2000)
        bag.write("/balance/reading", 1_000 + i, bytes(store.serialize_cdr(msg, Reading.__msgtype__)))
    bag.close(finish={"status": "finished"})
    return path


def test_custom_type_round_trip_with_custom_data(tmp_path):
    reader = EpisodeBagReader(write_bag(tmp_path / "bag"))
    assert reader.custom["episode_id"] == "ep_x" and json.loads(reader.custom["seeds"]) == {"task": 1}
    msgs = list(reader.messages())
    assert len(msgs) == 50 and msgs[7][2].raw_g == 7.0 and msgs[7][2].header.stamp.sec == 7
    assert reader.topics() == {"/balance/reading": "labference/msg/BalanceReading"}


def test_existing_bag_is_never_overwritten(tmp_path):
    write_bag(tmp_path / "bag")
    with pytest.raises(Exception, match="exists"):
        EpisodeBag(tmp_path / "bag", {})


def test_truncated_mcap_names_file_and_offset_and_stays_readable(tmp_path):
    bag = write_bag(tmp_path / "bag")
    mcap = next(bag.glob("*.mcap"))
    assert scan_mcap(mcap) == ""
    size = mcap.stat().st_size
    with open(mcap, "r+b") as f:
        f.truncate(size - 100)
    # Its recorder closed it (metadata.yaml): a file without its end was cut afterwards.
    with pytest.raises(BagError, match="cut or overwritten after it was written; every recorded message is still "
                                       "there"):
        EpisodeBagReader(bag)
    # Without metadata.yaml it is what a killed recorder leaves: the summary is cut off,
    # the messages are still there, read up to the last complete record.
    (bag / "metadata.yaml").unlink()
    reader = EpisodeBagReader(bag)
    assert reader.truncated.startswith(f"{mcap}: truncated at byte") and "truncated but readable" in reader.truncated
    assert len(list(reader.messages(decoder="rosbags"))) == 50


def test_a_bag_cut_inside_a_record_header_names_where_the_file_ends(tmp_path):
    bag = write_bag(tmp_path / "bag")
    mcap = next(bag.glob("*.mcap"))
    data = mcap.read_bytes()
    # The start of the third record (after the magic, the header and the first record).
    offset = 8
    for _ in range(2):
        offset += 9 + struct.unpack_from("<Q", data, offset + 1)[0]
    with open(mcap, "r+b") as f:
        f.truncate(offset + 4)
    assert scan_mcap(mcap) == (f"{mcap}: truncated at byte {offset + 4}: incomplete record header at byte {offset} "
                               f"(no footer; the last complete record ends at byte {offset})")


def test_unclosed_bag_is_reported(tmp_path):
    bag = write_bag(tmp_path / "bag")
    (bag / "metadata.yaml").unlink()
    with pytest.raises(BagError, match="metadata.yaml: missing"):
        EpisodeBagReader(bag)


def test_not_a_bag(tmp_path):
    with pytest.raises(BagError, match="no rosbag2 directory"):
        EpisodeBagReader(tmp_path)
