"""What a check returns: a stable check id, its subject, pass or fail (a pass may carry a warning), and on failure
the likely cause (on a warning, what to do about it)."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class CheckResult:
    check: str
    """Stable check id, e.g. ``hpa.current-metrics``."""
    subject: str
    """What was checked, e.g. ``pool/a10`` or ``hpa/inference/flower``."""
    ok: bool
    message: str
    """What was found (and, on failure, what is wrong)."""
    cause: str = ""
    """Likely cause of a failure, or what to do about a warning; empty when the check passed cleanly."""
    warning: bool = False
    """Passed, but close to failing (e.g. a model load above half its startup budget): it does not fail the run."""

    def to_dict(self) -> dict:
        return asdict(self)


def _pass(check: str, subject: str, message: str) -> CheckResult:
    return CheckResult(check, subject, True, message)


def _fail(check: str, subject: str, message: str, cause: str) -> CheckResult:
    return CheckResult(check, subject, False, message, cause)


def _warn(check: str, subject: str, message: str, advice: str) -> CheckResult:
    return CheckResult(check, subject, True, message, advice, warning=True)
