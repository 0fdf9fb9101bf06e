"""ROS 2 nodes. Importing the package selects MuJoCo's headless GL backend first
(headless_gl.py), before any node module imports MuJoCo."""
from labference_ros.nodes import headless_gl  # noqa: F401  (must stay the package's first import)
