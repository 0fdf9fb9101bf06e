"""What /lab_sim/advance answers besides success, shared by lab_sim and its callers."""
from __future__ import annotations

ADVANCE_RUNNING = "another advance is running"
RESET_DURING_ADVANCE = "the scene was reset or restored during the advance"
