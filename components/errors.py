"""Config errors: every problem names the config path, the bad value and what is allowed."""
from dataclasses import dataclass

from gpuplatform.components.config import PROJECT


@dataclass(frozen=True)
class ConfigIssue:
    path: str
    """Path inside the ``gpu-platform`` namespace, e.g. ``nodePools[0].sharing.profile``."""
    message: str

    def __str__(self) -> str:
        return f"{PROJECT}:{self.path}: {self.message}"


class ConfigError(Exception):
    """All problems of one stack config, reported together."""

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = issues
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"invalid stack configuration ({len(self.issues)} problem{'s' if len(self.issues) != 1 else ''}):"]
        lines += [f"  - {issue}" for issue in self.issues]
        return "\n".join(lines)


def fmt(value) -> str:
    """A value as it appears in an error message."""
    return repr(value) if isinstance(value, str) else str(value)


def one_of(choices) -> str:
    choices = list(choices)
    return ", ".join(str(c) for c in choices) if choices else "(none)"
