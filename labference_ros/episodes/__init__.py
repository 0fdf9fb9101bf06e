"""Plain (rclpy-free) parts of the episode runner: the run plan and the attempt log."""
