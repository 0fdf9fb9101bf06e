"""Agent tests render headless and reuse the policy tests' closed loop."""
import os
import pathlib
import sys

os.environ.setdefault("MUJOCO_GL", "egl")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "policies"))
