"""The embedded launcher: starts a graph description as supervised processes
where `ros2 launch` is not installed (launch and launch_ros are not on PyPI)."""
