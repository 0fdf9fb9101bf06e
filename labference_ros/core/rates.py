"""The graph's sim-time rates: one source for the launch defaults, the nodes' parameter
defaults and the Oracle's in-process world, which must step as the graph does."""
from __future__ import annotations

CAMERA_RATE_HZ = 10.0  # camera frames; environment transitions happen at camera ticks
MEASUREMENT_RATE_HZ = 100.0  # joint states, the load-cell wrench and the evaluator's world state
