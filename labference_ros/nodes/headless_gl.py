"""MuJoCo's OpenGL backend, chosen before anything imports MuJoCo.

MuJoCo reads MUJOCO_GL once, when it is first imported; unset, it takes GLFW,
which needs a display and crashed lab_sim (SIGSEGV, "DISPLAY environment
variable is missing") when a node was started without the project's launcher
(`ros2 launch`, `ros2 run`, by hand). Imported by `labference_ros.nodes`
(its package __init__), so every node module selects the backend itself,
however it was started. An explicit MUJOCO_GL is kept; unset, EGL is chosen,
as `labference launch` chooses it (rosenv.loopback_environ), so that a node's
camera images are rendered the same way whichever way it was started.
"""
from __future__ import annotations

import os
import sys

HEADLESS_BACKEND = "egl"


def select_backend() -> str:
    """The backend MuJoCo will use; sets MUJOCO_GL (and PyOpenGL's platform) when unset."""
    chosen = os.environ.get("MUJOCO_GL", "").strip()
    if chosen:
        return chosen
    if "mujoco" in sys.modules:  # too late to choose: name it for whoever looks
        return ""
    os.environ["MUJOCO_GL"] = HEADLESS_BACKEND
    os.environ.setdefault("PYOPENGL_PLATFORM", HEADLESS_BACKEND)
    return HEADLESS_BACKEND


select_backend()
