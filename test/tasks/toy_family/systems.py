"""The toy family's reference system (declared; the registry finds it by name)."""
from __future__ import annotations

from labference_ros.core.system import TestedSystem


class ToyExpert(TestedSystem):
    privileged = True
