"""Oracle tests render headless; MUJOCO_GL must be set before mujoco loads."""
import os

os.environ.setdefault("MUJOCO_GL", "egl")
