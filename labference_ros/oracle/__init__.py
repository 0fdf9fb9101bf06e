"""Oracle diagnostic protocol (paper 6.1-6.4, 7.4): verified checkpoints,
scoped interventions with receipts, matched continuations and gains.
Pure Python on MujocoBackend; no ROS."""
