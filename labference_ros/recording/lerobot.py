"""LeRobot-format datasets (on-disk format v3.0) from episode bags and run records.

Layout (relative to the dataset root):
  meta/info.json                      codebase_version "v3.0", fps, totals, path templates, features
  meta/stats.json                     per feature min/max/mean/std/count and quantiles
  meta/tasks.parquet                  one row per task string (the pandas index) with its task_index
  meta/episodes/chunk-000/file-000.parquet   one row per episode: length, tasks, global index range,
                                      data and video file indices, video time range, per-episode stats
  data/chunk-000/file-NNN.parquet     one row per frame: observation.state, action, control_mask,
                                      timestamp, frame_index, episode_index, index, task_index
  videos/observation.images.<cam>/chunk-000/file-NNN.mp4   episodes concatenated in index order

A frame is one demonstration step (demo_steps.read_steps): the observation at a
front-camera frame and the command applied over the following frame interval,
in the project's joint-position convention: observation.state = 7 joint
positions (rad) + gripper width (m); action = 7 absolute joint targets (rad) +
commanded gripper width (m). Before the first gripper command the action's
width is the measured width (the gripper holds). The task string is the
episode's public instruction. Only accepted episodes (the HDF5 export's
acceptance rule: a valid completion whose replay audit agrees) are written.
Writers: pyarrow for parquet, imageio-ffmpeg (libx264, yuv420p) for video.
"""
from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from labference_ros.core.records import task_family_name
from labference_ros.tasks import family as task_family
from labference_ros.sim.backend import ARM_JOINT_NAMES

from .audit import audit_episode, find_episode_bags
from .bag_reader import BagError, EpisodeBagReader
from .demo_steps import read_steps
from .demos import outcome_of

CODEBASE_VERSION = "v3.0"
ROBOT_TYPE = "franka_panda"
CHUNKS_SIZE = 1000  # files per chunk directory
EPISODES_PER_FILE = 50  # data and video files roll over after this many episodes
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
STATE_NAMES = [*ARM_JOINT_NAMES, "gripper_width"]
ACTION_NAMES = [f"{n}_target" for n in ARM_JOINT_NAMES] + ["gripper_width_command"]
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
VIDEO_CODEC, PIX_FMT = "h264", "yuv420p"


class ExportError(RuntimeError):
    """Nothing exportable, or inconsistent sources (named cause)."""


def _read_json(path: pathlib.Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def _frames(steps) -> dict[str, np.ndarray]:
    """EpisodeSteps -> per-frame columns (K-1 frames)."""
    names = list(steps.joint_names)
    arm = [names.index(n) for n in ARM_JOINT_NAMES]
    fingers = [names.index(n) for n in FINGERS]
    q = steps.joint_positions[:-1]
    width = q[:, fingers].sum(axis=1)
    state = np.column_stack([q[:, arm], width]).astype(np.float32)
    cmd_width = np.where(np.isnan(steps.gripper_width), width, steps.gripper_width)
    action = np.column_stack([steps.arm_action, cmd_width]).astype(np.float32)
    return {"observation.state": state, "action": action,
            "control_mask": steps.control_mask.astype(np.int64),
            "timestamp": (steps.times[:-1] - steps.times[0]).astype(np.float32)}


def _numeric_stats(values: np.ndarray) -> dict:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    out = {"min": v.min(0), "max": v.max(0), "mean": v.mean(0), "std": v.std(0)}
    out.update({k: np.quantile(v, q, axis=0) for k, q in QUANTILES.items()})
    out = {k: x.tolist() for k, x in out.items()}
    out["count"] = [int(len(v))]
    return out


def _image_stats(frames: np.ndarray) -> dict:
    """Per channel, pixel values scaled to 0..1, shaped [3,1,1] as LeRobot keeps them."""
    px = frames.reshape(-1, frames.shape[-1]).astype(np.float64) / 255.0
    out = {"min": px.min(0), "max": px.max(0), "mean": px.mean(0), "std": px.std(0)}
    out.update({k: np.quantile(px, q, axis=0) for k, q in QUANTILES.items()})
    out = {k: [[[float(c)]] for c in x] for k, x in out.items()}
    out["count"] = [int(len(frames))]
    return out


def _merge_stats(parts: list[dict], weights: list[int]) -> dict:
    """Dataset stats from episode stats: exact min/max/mean/std; quantiles as
    the frame-weighted mean of the episodes' quantiles (as LeRobot aggregates)."""
    w = np.asarray(weights, dtype=np.float64)
    arr = {k: np.array([p[k] for p in parts], dtype=np.float64) for k in parts[0] if k != "count"}
    shape = (-1,) + (1,) * (arr["mean"].ndim - 1)
    ww = w.reshape(shape)
    mean = (arr["mean"] * ww).sum(0) / w.sum()
    var = ((arr["std"] ** 2 + (arr["mean"] - mean) ** 2) * ww).sum(0) / w.sum()
    out = {"min": arr["min"].min(0), "max": arr["max"].max(0), "mean": mean, "std": np.sqrt(var)}
    out.update({k: (arr[k] * ww).sum(0) / w.sum() for k in QUANTILES})
    out = {k: x.tolist() for k, x in out.items()}
    out["count"] = [int(w.sum())]
    return out


def _accept(bag: pathlib.Path) -> tuple[dict, object | None]:
    records = bag.parent
    run = _read_json(records / "run.json") or {}
    scores = _read_json(records / "scores.json")
    attempt = {"episode_id": run.get("episode_id") or records.name, "bag": str(bag),
               "outcome": outcome_of(scores), "accepted": False, "reject_reason": ""}
    if attempt["outcome"] not in ("success", "recovered"):
        attempt["reject_reason"] = f"outcome {attempt['outcome']}"
        return attempt, None
    try:
        reader = EpisodeBagReader(bag)
        attempt["episode_id"] = reader.custom.get("episode_id") or attempt["episode_id"]
        steps = read_steps(reader, (scores or {}).get("t"), run.get("environment_intervals") or ())
        family = task_family(task_family_name(run))
        instruction = family.instance_from_json(json.dumps(run["instance"])).public_instruction()
    except (BagError, ValueError, KeyError, TypeError) as exc:
        attempt["reject_reason"] = f"unreadable: {exc}"
        return attempt, None
    verdict = audit_episode(bag)
    attempt["audit"] = verdict.verdict
    if verdict.code != 0:
        attempt["reject_reason"] = f"replay audit: {verdict.verdict}"
        return attempt, None
    if len(steps.times) < 2:
        attempt["reject_reason"] = "fewer than two frames"
        return attempt, None
    attempt["accepted"] = True
    attempt["notes"] = steps.notes
    return attempt, (steps, instruction)


class _VideoFiles:
    """One mp4 per (camera, file index); episodes appended in order."""

    def __init__(self, root: pathlib.Path, fps: int):
        self.root, self.fps = root, fps
        self.writers: dict[str, tuple[int, object]] = {}
        self.frames_in_file: dict[str, int] = {}

    def append(self, key: str, file_index: int, frames: np.ndarray) -> tuple[float, float]:
        import imageio.v2 as imageio

        current = self.writers.get(key)
        if current is None or current[0] != file_index:
            if current is not None:
                current[1].close()
            path = self.root / VIDEO_PATH.format(video_key=key, chunk_index=file_index // CHUNKS_SIZE,
                                                 file_index=file_index)
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = imageio.get_writer(path, fps=self.fps, codec="libx264", pixelformat=PIX_FMT,
                                        macro_block_size=1, quality=8, ffmpeg_log_level="error")
            self.writers[key] = (file_index, writer)
            self.frames_in_file[key] = 0
        writer = self.writers[key][1]
        for frame in frames:
            writer.append_data(frame)
        start = self.frames_in_file[key]
        self.frames_in_file[key] = start + len(frames)
        return start / self.fps, (start + len(frames)) / self.fps

    def close(self) -> None:
        for _, writer in self.writers.values():
            writer.close()
        self.writers.clear()


def export_run(run_dirs, out_dir: pathlib.Path, overwrite: bool = False) -> dict:
    """Write a LeRobot v3.0 dataset of every accepted episode under run_dirs."""
    run_dirs = [pathlib.Path(r) for r in ([run_dirs] if isinstance(run_dirs, (str, pathlib.Path)) else run_dirs)]
    out_dir = pathlib.Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise ExportError(f"{out_dir} exists and is not empty")
        shutil.rmtree(out_dir)
    attempts, accepted = [], []
    for run_dir in run_dirs:
        for bag in find_episode_bags(run_dir):
            attempt, data = _accept(bag)
            attempts.append(attempt)
            if data is not None:
                accepted.append((attempt, *data))
    if not accepted:
        raise ExportError(f"no accepted episode in {', '.join(map(str, run_dirs))} "
                          f"({len(attempts)} attempts: {[a['reject_reason'] for a in attempts]})")
    rates = {round(s.frame_rate_hz, 6) for _, s, _ in accepted}
    if len(rates) != 1:
        raise ExportError(f"episodes differ in frame rate {sorted(rates)}: one dataset has one fps")
    fps = int(round(rates.pop()))
    cams = sorted(accepted[0][1].images)
    shapes = {c: accepted[0][1].images[c].shape[1:] for c in cams}
    for _, s, _ in accepted:
        if sorted(s.images) != cams or any(s.images[c].shape[1:] != shapes[c] for c in cams):
            raise ExportError("episodes differ in cameras or image sizes")

    out_dir.mkdir(parents=True, exist_ok=True)
    tasks: dict[str, int] = {}
    videos = _VideoFiles(out_dir, fps)
    episode_rows, data_tables = [], {}
    ep_stats, lengths = [], []
    index = 0
    try:
        for ep_index, (attempt, steps, instruction) in enumerate(accepted):
            cols = _frames(steps)
            n = len(cols["timestamp"])
            task_index = tasks.setdefault(instruction, len(tasks))
            file_index = ep_index // EPISODES_PER_FILE
            cols.update(frame_index=np.arange(n, dtype=np.int64), episode_index=np.full(n, ep_index, np.int64),
                        index=np.arange(index, index + n, dtype=np.int64),
                        task_index=np.full(n, task_index, np.int64))
            data_tables.setdefault(file_index, []).append(_frame_table(cols))
            row = {"episode_index": ep_index, "tasks": [instruction], "length": n,
                   "dataset_from_index": index, "dataset_to_index": index + n,
                   "data/chunk_index": file_index // CHUNKS_SIZE, "data/file_index": file_index,
                   "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
                   "labference/episode_id": attempt["episode_id"], "labference/bag": attempt["bag"]}
            stats = {k: _numeric_stats(v) for k, v in cols.items()}
            for cam in cams:
                key = f"observation.images.{cam}"
                frames = steps.images[cam][:-1]
                t0, t1 = videos.append(key, file_index, frames)
                row.update({f"videos/{key}/chunk_index": file_index // CHUNKS_SIZE,
                            f"videos/{key}/file_index": file_index,
                            f"videos/{key}/from_timestamp": t0, f"videos/{key}/to_timestamp": t1})
                stats[key] = _image_stats(frames)
            for feature, st in stats.items():
                for name, value in st.items():
                    row[f"stats/{feature}/{name}"] = value
            episode_rows.append(row)
            ep_stats.append(stats)
            lengths.append(n)
            index += n
    finally:
        videos.close()

    for file_index, tables in data_tables.items():
        path = out_dir / DATA_PATH.format(chunk_index=file_index // CHUNKS_SIZE, file_index=file_index)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(tables), path)
    _write_episodes(out_dir, episode_rows)
    _write_tasks(out_dir, tasks)
    stats = {f: _merge_stats([s[f] for s in ep_stats], lengths) for f in ep_stats[0]}
    (out_dir / "meta" / "stats.json").write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
    info = _info(fps, len(accepted), index, len(tasks), cams, shapes,
                 n_files=len(data_tables), sources=[str(r) for r in run_dirs])
    (out_dir / "meta" / "info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return {"dataset": out_dir, "episodes": len(accepted), "frames": index, "attempts": attempts, "fps": fps}


def _frame_table(cols: dict) -> pa.Table:
    def vectors(a):
        return pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1), pa.float32()), a.shape[1])
    return pa.table({
        "observation.state": vectors(cols["observation.state"]), "action": vectors(cols["action"]),
        "control_mask": pa.array(cols["control_mask"], pa.int64()),
        "timestamp": pa.array(cols["timestamp"], pa.float32()),
        "frame_index": pa.array(cols["frame_index"]), "episode_index": pa.array(cols["episode_index"]),
        "index": pa.array(cols["index"]), "task_index": pa.array(cols["task_index"])})


def _write_episodes(out_dir: pathlib.Path, rows: list[dict]) -> None:
    columns = {k: [r[k] for r in rows] for k in rows[0]}
    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    path = out_dir / EPISODES_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _write_tasks(out_dir: pathlib.Path, tasks: dict[str, int]) -> None:
    """Task strings as the pandas index (how LeRobot reads meta/tasks.parquet
    with pandas), task_index as the column."""
    ordered = sorted(tasks.items(), key=lambda kv: kv[1])
    table = pa.table({"task_index": pa.array([i for _, i in ordered], pa.int64()),
                      "task": pa.array([t for t, _ in ordered], pa.string())})
    pandas_meta = {"index_columns": ["task"], "column_indexes": [],
                   "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
                                "numpy_type": "int64", "metadata": None},
                               {"name": "task", "field_name": "task", "pandas_type": "unicode",
                                "numpy_type": "object", "metadata": None}],
                   "creator": {"library": "pyarrow", "version": pa.__version__}, "pandas_version": "2.2.3"}
    table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
    pq.write_table(table, out_dir / "meta" / "tasks.parquet")


def _info(fps, episodes, frames, n_tasks, cams, shapes, n_files, sources) -> dict:
    features = {
        "observation.state": {"dtype": "float32", "shape": [8], "names": STATE_NAMES},
        "action": {"dtype": "float32", "shape": [8], "names": ACTION_NAMES},
        "control_mask": {"dtype": "int64", "shape": [1], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    }
    for cam in cams:
        h, w, c = (int(x) for x in shapes[cam])
        features[f"observation.images.{cam}"] = {
            "dtype": "video", "shape": [h, w, c], "names": ["height", "width", "channels"],
            "info": {"video.height": h, "video.width": w, "video.codec": VIDEO_CODEC, "video.pix_fmt": PIX_FMT,
                     "video.is_depth_map": False, "video.fps": fps, "video.channels": c, "has_audio": False}}
    return {"codebase_version": CODEBASE_VERSION, "robot_type": ROBOT_TYPE, "total_episodes": episodes,
            "total_frames": frames, "total_tasks": n_tasks, "chunks_size": CHUNKS_SIZE,
            "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": fps,
            "splits": {"train": f"0:{episodes}"}, "data_path": DATA_PATH, "video_path": VIDEO_PATH,
            "features": features,
            "labference": {"sources": sources, "data_files": n_files, "episodes_per_file": EPISODES_PER_FILE,
                           "action_convention": "absolute joint targets (rad) + commanded gripper width (m); "
                                                "before the first gripper command the measured width",
                           "state_convention": "joint positions (rad) + gripper width (m, sum of the fingers)",
                           "control_mask": "1: the tested system commands; 0: environment-controlled interval"}}
