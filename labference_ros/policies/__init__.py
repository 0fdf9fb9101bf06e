"""Tested-system adapters: scripted reference systems and remote policies."""
from labference_ros.policies.base import (EvaluationValidityError, EvaluatorView, TestedSystem,
                                          available, make, register)

__all__ = ["EvaluationValidityError", "EvaluatorView", "TestedSystem", "available", "make",
           "register"]
