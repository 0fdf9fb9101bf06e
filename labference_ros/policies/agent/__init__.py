"""The agent bridge: OpenAI-compatible tool-calling models as tested systems.

Selected as `system:=agent`; its parameters arrive through the policy
bridge's `system_params_json`, e.g.
  {"agent_url": "http://127.0.0.1:8000/v1", "agent_model": "my-model",
   "api_key_env": "OPENAI_API_KEY", "price_table": {"input_per_mtok": 2.0,
   "output_per_mtok": 8.0, "source": "..."}, "max_rounds": 6,
   "max_actions": 24, "turn_deadline_s": 90.0}
Graph hooks (optional, duck-typed): set_output_dir(path) at episode start,
drain_reports() after each act() for /referee/report_operation,
end_episode(reason) at finish (returns the episode summary, whose `usage`
the episode runner writes into run.json),
interfaces()/supply(site, mode, payload) for Oracle Assist at the state and
decision sites (each joins the conversation once, as a user message at the next request),
scan_requests(EvaluatorSecrets) for the leak check.
"""
from labference_ros.policies.agent.driver import AgentSystem

__all__ = ["AgentSystem"]
