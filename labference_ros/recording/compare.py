"""Field-by-field comparison of rebuilt records with the online run records."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from labference_ros.core.records import RECORD_FILES, dumps

MAX_FINDINGS_PER_FILE = 25


@dataclass(frozen=True)
class Finding:
    check: str          # records | evidence | inputs | identity
    where: str          # file and line, or topic
    record: str         # event id / receipt id / opportunity ... ("" when none)
    field: str          # dotted path ("" when the whole record)
    online: object
    audit: object
    note: str = ""

    def line(self) -> str:
        what = f"{self.record} " if self.record else ""
        fld = f"field {self.field}: " if self.field else ""
        vals = f"online {_short(self.online)} vs audit {_short(self.audit)}"
        return f"[{self.check}] {self.where}: {what}{fld}{vals}" + (f" ({self.note})" if self.note else "")


def _short(v, limit=120) -> str:
    s = json.dumps(v, sort_keys=True, default=str)
    return s if len(s) <= limit else s[:limit - 3] + "..."


def normalise(record: dict) -> dict:
    """The form the online writer stored (NaN -> null, tuples -> lists)."""
    return json.loads(dumps(record))


def record_label(r: dict) -> str:
    kind = r.get("record", "?")
    for key in ("event_id", "receipt_id", "report_id"):
        if key in r:
            extra = f" ({r['category']})" if "category" in r else ""
            return f"{kind} {r[key]}{extra}"
    if kind == "opportunity":
        return f"opportunity {r.get('opportunity_id')} (evidence v{r.get('evidence_version')})"
    if kind == "legal_set":
        return f"legal_set evidence v{r.get('evidence_version')} opportunity {r.get('opportunity_id')}"
    return f"{kind} t={r.get('t')}"


def field_diffs(online, audit, path: str = "") -> list[tuple[str, object, object]]:
    if isinstance(online, dict) and isinstance(audit, dict):
        out = []
        for k in sorted(set(online) | set(audit), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in online:
                out.append((sub, "<absent>", audit[k]))
            elif k not in audit:
                out.append((sub, online[k], "<absent>"))
            else:
                out += field_diffs(online[k], audit[k], sub)
        return out
    if isinstance(online, list) and isinstance(audit, list) and len(online) == len(audit):
        out = []
        for i, (a, b) in enumerate(zip(online, audit)):
            out += field_diffs(a, b, f"{path}[{i}]")
        return out
    if _equal(online, audit):
        return []
    return [(path, online, audit)]


def _equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def compare_stream(name: str, online: list[dict], audit: list[dict]) -> list[Finding]:
    """Records in order; the first divergences with their fields, then counts."""
    findings: list[Finding] = []
    for i in range(max(len(online), len(audit))):
        where = f"{name} line {i + 1}"
        if i >= len(online):
            findings.append(Finding("records", where, record_label(audit[i]), "", "<missing>", "<present>",
                                    "the audit produced a record the online run did not write"))
        elif i >= len(audit):
            findings.append(Finding("records", where, record_label(online[i]), "", "<present>", "<missing>",
                                    "the online run wrote a record the audit does not reproduce"))
        else:
            label = record_label(online[i])
            for path, a, b in field_diffs(online[i], audit[i]):
                findings.append(Finding("records", where, label, path, a, b))
        if len(findings) >= MAX_FINDINGS_PER_FILE:
            findings.append(Finding("records", name, "record count", "", len(online), len(audit),
                                    f"stopped after {MAX_FINDINGS_PER_FILE} findings"))
            break
    return findings


def split_by_file(records: list[dict]) -> dict[str, list[dict]]:
    """Records (already normalised) by the file the online writer puts them in."""
    out: dict[str, list[dict]] = {name: [] for name in sorted(set(RECORD_FILES.values()))}
    for r in records:
        name = RECORD_FILES.get(r.get("record"))
        if name:
            out[name].append(r)
    return out
