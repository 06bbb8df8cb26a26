"""The three report formats of ``gpuplatform check``: a table for people, JSON for scripts, SARIF 2.1.0 for code
scanning."""
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from gpuplatform import apiserver
from gpuplatform.check.findings import CONFIG_RULE_DESCRIPTION, CONFIG_RULE_ID, Violation
from gpuplatform.check.yaml_reading import InputError
from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.policies.registry import LOW, EnforcementLevel, PolicyDef


def _short_type(t: str) -> str:
    return t.rsplit(":", 1)[-1] if t else "(stack)"


@dataclass(frozen=True)
class Checked:
    """What a run covered, for the report's last line."""

    policies: int
    """Policies of the pack that ran: the pack's own count, as README.md and docs/policies.md state it."""
    objects: int
    files: int
    api_server: bool = False
    """Whether the API server's checks ran too (no policy of the pack: they are said beside the count)."""

    def render(self) -> str:
        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"
        also = " and the API server's checks" if self.api_server else ""
        return f"checked {n(self.policies, 'policy').replace('policys', 'policies')}{also} on " \
               f"{n(self.objects, 'object')} from {n(self.files, 'file')}"


def format_table(violations: Sequence[Violation], checked: Optional[Checked] = None) -> str:
    if not violations:
        return "No policy violations." + (f" ({checked.render()})" if checked else "")
    located_any = any(v.file for v in violations)
    header = ("LEVEL", "POLICY", "RESOURCE") + (("FILE",) if located_any else ())
    rows = [header + ("MESSAGE",)]
    order = sorted(violations, key=lambda v: (not v.mandatory, v.policy_id, v.file, v.line or 0, v.resource_name))
    rows += [(v.level, v.policy_id, f"{_short_type(v.resource_type)} {v.resource_name}".strip())
             + ((v.where or "-",) if located_any else ()) + (v.message,) for v in order]
    cols = len(header)
    widths = [max(len(r[i]) for r in rows) for i in range(cols)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(cols)) + "  " + r[cols] for r in rows]
    mandatory = sum(v.mandatory for v in violations)
    lines.append(f"\n{len(violations)} violation(s): {mandatory} mandatory, {len(violations) - mandatory} advisory"
                 + (f"; {checked.render()}" if checked else ""))
    return "\n".join(lines)


def format_json(violations: Sequence[Violation]) -> str:
    return json.dumps([asdict(v) for v in violations], indent=2)


SARIF_VERSION = "2.1.0"


SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


_SARIF_LEVEL = {EnforcementLevel.MANDATORY.value: "error", EnforcementLevel.ADVISORY.value: "warning"}


# GitHub code scanning ranks security results by this property (docs "SARIF support for code scanning")
_SECURITY_SEVERITY = {"critical": "9.0", "high": "7.0", "medium": "5.0", "low": "3.0"}


def _uri(path: str) -> str:
    p = Path(path)
    try:
        p = p.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        pass
    return p.as_posix()


def _location(path: str, line: Optional[int]) -> dict:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(path)}}
    if line:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def format_sarif(violations: Sequence[Violation], locations: Optional[Mapping[str, tuple[str, int]]] = None,
                 default_location: Optional[tuple[str, Optional[int]]] = None,
                 errors: Sequence[InputError] = (), policies: Optional[Sequence[PolicyDef]] = None) -> str:
    """One SARIF 2.1.0 run: a rule per policy, a result per violation located at the document that declares the
    resource (or ``default_location``, e.g. the stack file), and unreadable inputs as tool notifications."""
    defs = list(policies if policies is not None else POLICY_DEFS)
    index = {p.id: i for i, p in enumerate(defs)}
    rules = []
    for p in defs:
        severity = (p.severity or LOW).value
        props: dict[str, Any] = {"tags": [p.category] + (["hardening"] if p.hardening else [])}
        if p.category in ("security", "pod-security"):
            props["security-severity"] = _SECURITY_SEVERITY.get(severity, "5.0")
        rules.append({"id": p.id, "name": p.id, "shortDescription": {"text": p.description.split(": ")[0][:120]},
                      "fullDescription": {"text": p.description},
                      "help": {"text": p.remediation or p.description},
                      "defaultConfiguration": {"level": _SARIF_LEVEL.get(p.level.value, "note")},
                      "properties": props})
    if any(v.policy_id not in index and v.policy_id != CONFIG_RULE_ID for v in violations):
        index[apiserver.RULE_ID] = len(rules)
        rules.append({"id": apiserver.RULE_ID, "name": apiserver.RULE_ID,
                      "shortDescription": {"text": "The API server must accept the object"},
                      "fullDescription": {"text": apiserver.RULE_DESCRIPTION},
                      "help": {"text": apiserver.RULE_DESCRIPTION},
                      "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["kubernetes"]}})
    if any(v.policy_id == CONFIG_RULE_ID for v in violations):
        index[CONFIG_RULE_ID] = len(rules)
        rules.append({"id": CONFIG_RULE_ID, "name": CONFIG_RULE_ID,
                      "shortDescription": {"text": "The stack configuration must be valid"},
                      "fullDescription": {"text": CONFIG_RULE_DESCRIPTION}, "help": {"text": CONFIG_RULE_DESCRIPTION},
                      "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["configuration"]}})
    results = []
    for v in violations:
        result: dict[str, Any] = {"ruleId": v.policy_id, "level": _SARIF_LEVEL.get(v.level, "note"),
                                  "message": {"text": v.message}}
        if v.policy_id in index:
            result["ruleIndex"] = index[v.policy_id]
        where = ((v.file, v.line) if v.file else None) or (locations or {}).get(
            f"{v.resource_type}::{v.resource_name}") or default_location
        if where:
            result["locations"] = [_location(where[0], where[1])]
        results.append(result)
    # a problem with the command line has no file to point at
    notifications = [{"level": "error", "message": {"text": e.message},
                      **({"locations": [_location(e.path, e.line)]} if e.path else {})} for e in errors]
    run = {"tool": {"driver": {"name": "gpuplatform", "informationUri": "https://www.pulumi.com/docs/iac/"
                                                                       "using-pulumi/crossguard/",
                               "rules": rules}},
           "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
           "results": results}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}, indent=2)
