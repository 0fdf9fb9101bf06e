"""What every task family's contract shares: its record form, content hash and id.

A contract is a frozen dataclass with `task`, `condition` and `version`
fields; every field is covered by the hash, so a run record (run.json) names
exactly which rules scored it. Change a number, bump the version; the hash
changes on its own.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cached_property

CONTRACT_SCHEMA = 1
# Fields added after contracts were first hashed: left out of the record (and the hash)
# while unset, so the contracts that do not declare them keep their identity.
OPTIONAL_FIELDS = ("external_event", "binding", "rebinds")


class HashedContract:
    """Mixin for a frozen dataclass contract."""

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in OPTIONAL_FIELDS:
            if key in d and d[key] is None:
                del d[key]
        d["schema"] = CONTRACT_SCHEMA
        return d

    @cached_property  # frozen: computed once (the referee and the audit ask per score record)
    def content_hash(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    @property
    def contract_id(self) -> str:
        return f"{self.task}.{self.condition}@{self.version}"

    def identity(self) -> dict:
        return {"id": self.contract_id, "version": self.version, "hash": self.content_hash}
