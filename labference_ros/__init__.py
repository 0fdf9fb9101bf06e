"""Labference-ROS: a ROS 2 benchmark that scores whether a laboratory robot's next
operation follows from what physically happened.

Layers (imports point down only): ``cli``/``graphs`` -> ``nodes``/``policies`` ->
``sim`` -> ``core``. ``core`` is pure Python (no rclpy, no simulator).
"""

__version__ = "0.1.0"
