"""One reading of the tested system's parameters for the launcher's check and the bridge."""
from __future__ import annotations

import pytest

from labference_ros.core.system_params import merged_system_params


def test_the_agents_own_arguments_join_the_json_object_and_empty_ones_do_not():
    assert merged_system_params('{"timeout_s": 10}', agent_url="http://127.0.0.1:9", agent_model="") == {
        "timeout_s": 10, "agent_url": "http://127.0.0.1:9"}
    assert merged_system_params("") == {}


@pytest.mark.parametrize("text, says", [("[1, 2]", "must be a JSON object; got '[1, 2]'"),
                                        ("{timeout_s: 1}", "must be a JSON object, e.g.")])
def test_anything_but_a_json_object_is_refused_with_what_was_given(text, says):
    with pytest.raises(ValueError, match=r"must be a JSON object") as refused:
        merged_system_params(text)
    assert says in str(refused.value)
