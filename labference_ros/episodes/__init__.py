"""Plain (rclpy-free) parts of the episode runner: the run plan, the attempt log, the run's
progress and exit codes, when an episode ends, and what the bridge's answers add to run.json."""
