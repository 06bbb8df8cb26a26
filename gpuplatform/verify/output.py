"""The report: a table for people, JSON for pipelines, and one progress line per polling round."""
from __future__ import annotations

import json

from gpuplatform.verify.results import CheckResult


def format_table(results: list[CheckResult]) -> str:
    rows = [("STATUS", "CHECK", "SUBJECT", "RESULT")] + [
        (_status(r), r.check, r.subject, r.message) for r in results]
    w0, w1, w2 = (max(len(row[i]) for row in rows) for i in range(3))
    lines = []
    for i, row in enumerate(rows):
        lines.append(f"{row[0]:<{w0}}  {row[1]:<{w1}}  {row[2]:<{w2}}  {row[3]}".rstrip())
        if i and results[i - 1].cause and (not results[i - 1].ok or results[i - 1].warning):
            label = "likely cause" if not results[i - 1].ok else "to do"
            lines.append(f"{'':<{w0}}  {'':<{w1}}  {'':<{w2}}  {label}: {results[i - 1].cause}")
    failed = sum(1 for r in results if not r.ok)
    warned = sum(1 for r in results if r.warning)
    lines.append("")
    lines.append(f"{len(results)} checks, {len(results) - failed} passed, {failed} failed"
                 + (f", {warned} with a warning" if warned else ""))
    return "\n".join(lines)


def _status(r: CheckResult) -> str:
    if not r.ok:
        return "FAIL"
    return "WARN" if r.warning else "ok"


def format_json(results: list[CheckResult]) -> str:
    failed = sum(1 for r in results if not r.ok)
    doc = {"ok": failed == 0, "summary": {"checks": len(results), "passed": len(results) - failed,
                                          "failed": failed, "warnings": sum(1 for r in results if r.warning)},
           "checks": [r.to_dict() for r in results]}
    return json.dumps(doc, indent=2)


def progress_line(round_no: int, elapsed: float, budget: int, results: list[CheckResult]) -> str:
    failing = [f"{r.check} {r.subject}" for r in results if not r.ok]
    passed = len(results) - len(failing)
    line = f"verify round {round_no} ({int(elapsed)}s/{budget}s): {passed}/{len(results)} checks pass"
    if failing:
        line += "; waiting on " + ", ".join(failing[:3]) + (f" (+{len(failing) - 3} more)" if len(failing) > 3 else "")
    return line
