"""The agent bridge: OpenAI-compatible tool-calling models as tested systems."""
from labference_ros.policies.agent.driver import AgentSystem

__all__ = ["AgentSystem"]
