"""Tested-system adapters (remote policies, the agent) and the registry by name."""
from labference_ros.policies.base import (EvaluationValidityError, EvaluatorView, TestedSystem, available,
                                          make, register, system_class)

__all__ = ["EvaluationValidityError", "EvaluatorView", "TestedSystem", "available", "make", "register",
           "system_class"]
