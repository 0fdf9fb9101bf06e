"""`labference demos` records episodes through the graph and converts them to HDF5."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import h5py
import numpy as np
import pytest

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


@pytest.fixture(scope="module")
def demos_run(tmp_path_factory):
    """One recorded episode, exported in both formats."""
    out = tmp_path_factory.mktemp("demos") / "demos_run"
    proc = subprocess.run([LABFERENCE, "demos", "--system", "scripted_expert", "--episodes", "1", "--out", str(out),
                           "--format", "hdf5", "--format", "lerobot"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return out


@pytest.mark.slow
def test_demos_command_writes_hdf5_whose_observations_precede_their_actions(demos_run):
    out = demos_run
    manifest = json.loads((out / "demos" / "collection_manifest.json").read_text())
    (attempt,) = manifest["attempts"]
    assert attempt["accepted"] is True and attempt["audit"] != "DISAGREE"
    with h5py.File(out / "demos" / "demonstrations.hdf5", "r") as f:
        ep = f["episodes"][attempt["episode_id"]]
        obs_t, act_t = ep["observation/t"][:], ep["action/t"][:]
        assert len(act_t) > 10 and len(obs_t) == len(act_t) + 1  # ... and the observation after the last action
        assert np.all(obs_t[:-1] <= act_t) and np.all(act_t < obs_t[1:])
        for cam in ("front", "wrist", "display"):
            assert np.all(ep[f"observation/image_stamps/{cam}"][:] <= obs_t + 1e-9)
        assert "scores_json" in f["diagnostics"][attempt["episode_id"]]


@pytest.mark.slow
def test_demos_command_writes_a_lerobot_v3_dataset_that_reads_back(demos_run):
    import imageio_ffmpeg
    import pyarrow.parquet as pq

    from labference_ros.tasks.weighing.instance import WeighingInstance
    from labference_ros.msgconv import stamp_to_s
    from labference_ros.recording.audit import find_episode_bags
    from labference_ros.recording.bag_reader import EpisodeBagReader

    root = demos_run / "demos" / "lerobot"
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 1 and info["total_tasks"] == 1
    fps, n = info["fps"], info["total_frames"]
    assert fps == 10 and info["splits"] == {"train": "0:1"}
    cams = ("display", "front", "wrist")
    assert sorted(k for k, f in info["features"].items() if f["dtype"] == "video") == \
        [f"observation.images.{c}" for c in cams]
    for key in ("observation.state", "action"):
        assert info["features"][key]["shape"] == [8] and len(info["features"][key]["names"]) == 8

    # frames: one row per step, global and per-episode indices, timestamps on the fps clock
    data = pq.read_table(root / info["data_path"].format(chunk_index=0, file_index=0))
    assert data.num_rows == n and data.schema.field("observation.state").type.list_size == 8
    assert str(data.schema.field("action").type.value_type) == "float"
    frame_index = np.array(data["frame_index"].to_pylist())
    assert np.array_equal(frame_index, np.arange(n)) and np.array_equal(data["index"].to_pylist(), np.arange(n))
    assert set(data["episode_index"].to_pylist()) == {0} and set(data["task_index"].to_pylist()) == {0}
    assert np.allclose(data["timestamp"].to_pylist(), frame_index / fps, atol=1e-4)
    state = np.array(data["observation.state"].to_pylist())
    action = np.array(data["action"].to_pylist())
    assert state.shape == action.shape == (n, 8) and np.isfinite(action).all()

    # episodes, tasks, stats
    (ep,) = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert (ep["length"], ep["dataset_from_index"], ep["dataset_to_index"]) == (n, 0, n)
    (bag,) = find_episode_bags(demos_run)
    run = json.loads((bag.parent / "run.json").read_text())
    instruction = WeighingInstance.from_json(json.dumps(run["instance"])).public_instruction()
    assert ep["tasks"] == [instruction]
    tasks = pq.read_table(root / "meta" / "tasks.parquet")
    assert tasks.to_pylist() == [{"task_index": 0, "task": instruction}]
    assert tasks.schema.pandas_metadata["index_columns"] == ["task"]
    stats = json.loads((root / "meta" / "stats.json").read_text())
    assert stats["action"]["count"] == [n] and np.allclose(stats["action"]["mean"], action.mean(0), atol=1e-5)
    assert np.array(stats["observation.images.front"]["mean"]).shape == (3, 1, 1)

    # the bag: one frame per front-camera period up to the episode's end, less the last observation
    # (a frame the recorder lost keeps its step: test_a_frame_missing_from_the_bag_keeps_its_step)
    end_t = json.loads((bag.parent / "scores.json").read_text())["t"]
    stamps = [stamp_to_s(m.header.stamp) for topic, _, m in EpisodeBagReader(bag).messages()
              if topic == "/cameras/front/image_raw" and stamp_to_s(m.header.stamp) <= end_t + 1e-9]
    assert n == round((stamps[-1] - stamps[0]) * fps)
    with h5py.File(demos_run / "demos" / "demonstrations.hdf5", "r") as f:
        (attempt,) = json.loads((demos_run / "demos" / "collection_manifest.json").read_text())["attempts"]
        q = f["episodes"][attempt["episode_id"]]["observation/joint_positions"][:-1]
    assert np.allclose(state[:, :7], q[:, :7], atol=1e-6)

    # videos: decoded with ffmpeg, one frame per row, the episode's time range
    for cam in cams:
        key = f"observation.images.{cam}"
        assert (ep[f"videos/{key}/from_timestamp"], ep[f"videos/{key}/to_timestamp"]) == (0.0, n / fps)
        path = root / info["video_path"].format(video_key=key, chunk_index=0, file_index=0)
        reader = imageio_ffmpeg.read_frames(str(path))
        meta = next(reader)
        assert tuple(meta["size"]) == (320, 240) and meta["fps"] == fps
        assert sum(1 for _ in reader) == n


@pytest.mark.slow
def test_a_frame_missing_from_the_bag_keeps_its_step_with_the_earlier_image(demos_run, tmp_path):
    """A recorder short of CPU can lose a camera sample. The exports keep the frame
    clock: the step stays, holds the last earlier image, and a note says where."""
    import pyarrow.parquet as pq

    from bag_edit import tampered_copy
    from labference_ros.recording.audit import find_episode_bags

    (bag,) = find_episode_bags(demos_run)
    front_stamps = []

    def drop_the_40th_front_frame(topic, msgtype, t, data):
        if topic == "/cameras/front/image_raw":
            sec, nanosec = struct.unpack_from("<iI", data, 4)  # after the CDR encapsulation header
            front_stamps.append(sec + nanosec * 1e-9)
            if len(front_stamps) == 40:
                return None
        return data

    tampered_copy(bag.parent, tmp_path / "run" / bag.parent.name, drop_the_40th_front_frame)
    assert len(front_stamps) > 60
    dropped = front_stamps[39]
    proc = subprocess.run([LABFERENCE, "demos-from-bags", str(tmp_path / "run"), "--format", "hdf5",
                           "--format", "lerobot"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # The recording itself may have lost frames on a loaded machine: those are noted too.
    (whole_attempt,) = json.loads((demos_run / "demos" / "collection_manifest.json").read_text())["attempts"]
    whole_front = [n for n in whole_attempt["notes"] if " front camera " in n]
    lost_before = int(whole_front[0].split()[0]) if whole_front else 0
    manifest = json.loads((tmp_path / "run" / "demos" / "collection_manifest.json").read_text())
    (attempt,) = manifest["attempts"]
    assert attempt["accepted"] is True
    (front_note,) = [n for n in attempt["notes"] if " front camera " in n]
    assert front_note.startswith(f"{lost_before + 1} front camera frame(s) missing from the bag (t = ")
    # The note lists the first five missing times: a recording that lost frames of its own
    # before the dropped one lists those and ends with "...".
    listed = front_note.split("(t = ")[1].split(" s)")[0]
    assert f"{dropped:.3f}" in listed or (lost_before >= 5 and listed.endswith(", ...")), front_note
    said = [line for line in proc.stdout.splitlines() if line.startswith("note:")]
    assert said == [f"note: {attempt['episode_id']}: {n}" for n in attempt["notes"]], proc.stdout  # once

    with h5py.File(demos_run / "demos" / "demonstrations.hdf5", "r") as f:
        whole = f["episodes"][attempt["episode_id"]]
        whole_t, whole_stamps = whole["observation/t"][:], whole["observation/image_stamps/front"][:]
    with h5py.File(tmp_path / "run" / "demos" / "demonstrations.hdf5", "r") as f:
        cut = f["episodes"][attempt["episode_id"]]
        assert json.loads(cut.attrs["notes"]) == attempt["notes"]
        cut_t, cut_stamps = cut["observation/t"][:], cut["observation/image_stamps/front"][:]
        images = cut["observation/images/front"]
        # the dropped frame's step is kept, with the frame before it
        assert np.allclose(cut_t, whole_t, atol=1e-6)
        (k,) = np.flatnonzero(np.isclose(whole_stamps, dropped, atol=1e-6))
        assert cut_stamps[k] == whole_stamps[k - 1] and cut_stamps[k + 1] == whole_stamps[k + 1]
        assert np.array_equal(images[k], images[k - 1])
        assert np.delete(cut_stamps, k).tolist() == np.delete(whole_stamps, k).tolist()

    info = json.loads((tmp_path / "run" / "demos" / "lerobot" / "meta" / "info.json").read_text())
    whole_info = json.loads((demos_run / "demos" / "lerobot" / "meta" / "info.json").read_text())
    assert info["total_frames"] == whole_info["total_frames"]
    data = pq.read_table(tmp_path / "run" / "demos" / "lerobot" / info["data_path"].format(chunk_index=0,
                                                                                         file_index=0))
    frame_index = np.array(data["frame_index"].to_pylist())
    assert np.allclose(data["timestamp"].to_pylist(), frame_index / info["fps"], atol=1e-4)
