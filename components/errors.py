"""Config errors: every problem names the config path, the bad value and what is allowed."""
import os
import re
from dataclasses import dataclass
from typing import ClassVar

from gpuplatform.components.config import PROJECT


@dataclass(frozen=True)
class ConfigIssue:
    path: str
    """Path inside the ``gpu-platform`` namespace, e.g. ``nodePools[0].sharing.profile``."""
    message: str
    of_command_line: ClassVar[bool] = False
    """True for a problem with a command-line argument (or a file it names), not with a stack key."""

    def __str__(self) -> str:
        return f"{PROJECT}:{self.path}: {self.message}"


@dataclass(frozen=True)
class CommandLineIssue(ConfigIssue):
    """A problem with a command-line argument or the file or folder it names, not with a stack key."""

    of_command_line = True

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """All problems of one stack config, reported together."""

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = issues
        super().__init__(self.render())

    def render(self) -> str:
        what = "command line" if self.issues and all(i.of_command_line for i in self.issues) else "stack configuration"
        lines = [f"invalid {what} ({len(self.issues)} problem{'s' if len(self.issues) != 1 else ''}):"]
        lines += [f"  - {issue}" for issue in self.issues]
        if any(SHORTENED.search(issue.message) for issue in self.issues):
            lines.append(f"  (long lists show their first {LISTED}; set {FULL_ERRORS_ENV}=1 to list every item)")
        return "\n".join(lines)


def fmt(value) -> str:
    """A value as it appears in an error message."""
    return repr(value) if isinstance(value, str) else str(value)


def one_of(choices) -> str:
    choices = list(choices)
    return ", ".join(str(c) for c in choices) if choices else "(none)"


LISTED = 3
"""Items a message lists before it summarizes the rest: a config with hundreds of workloads must still produce
an error a person reads."""
FULL_ERRORS_ENV = "GPUPLATFORM_FULL_ERRORS"
SHORTENED = re.compile(r" and \d+ more\b")


def listing(items, limit: int = LISTED) -> str:
    """``a, b, c and 497 more``: the first few items and a count of the rest, or every item when
    ``GPUPLATFORM_FULL_ERRORS`` is set."""
    items = [str(i) for i in items]
    if len(items) <= limit or os.environ.get(FULL_ERRORS_ENV, "") not in ("", "0"):
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"


def counted(n: int, unit: str) -> str:
    """``56 MIG instances``, ``1 GPU``, ``14 GiB``: a count of a unit, in the plural where English wants it."""
    head, of, rest = unit.partition(" of ")  # ``4 GiB of GPU memory``: the plural is the head noun's
    plural = n != 1 and not head.endswith(("B", "s"))
    return f"{n} {head}{'s' if plural else ''}{of}{rest}"
