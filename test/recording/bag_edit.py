"""Rewriting a recorded episode's bag message by message (tampering, for the audit's tests)."""
from __future__ import annotations

import pathlib
import shutil


def tampered_copy(src: pathlib.Path, dst: pathlib.Path, edit, custom: dict | None = None) -> pathlib.Path:
    """Copy an episode's records and rewrite its bag through ``edit(topic, msgtype, t, data)``,
    which returns new bytes or None to drop the message; ``custom`` replaces custom_data keys."""
    from labference_ros.recording.bag_reader import EpisodeBagReader
    from labference_ros.recording.bag_writer import EpisodeBag

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("bag", "videos"))
    reader = EpisodeBagReader(src / "bag")
    bag = EpisodeBag(dst / "bag", {**reader.custom, **(custom or {})})
    for topic, msgtype, t, data in reader.raw_messages():
        data = edit(topic, msgtype, t, data)
        if data is not None:
            bag.add_topic(topic, msgtype)
            bag.write(topic, t, data)
    bag.close()
    return dst
