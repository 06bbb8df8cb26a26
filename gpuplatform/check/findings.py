"""What a check reports: one :class:`Violation` per finding, and the exit code they add up to."""
from dataclasses import dataclass
from typing import Iterable, Optional

from gpuplatform.policies.registry import EnforcementLevel


@dataclass(frozen=True)
class Violation:
    policy_id: str
    level: str
    """``mandatory`` or ``advisory`` (what the CLI would do with it)."""
    resource_type: str
    """Type token of the resource, empty for a stack-wide violation."""
    resource_name: str
    message: str
    severity: str = ""
    file: str = ""
    """Where the object is declared: the manifest file (``--manifests``), the stack file or the project's program;
    empty when unknown."""
    line: Optional[int] = None
    """Line of the object's document (or of the ``List`` item) in ``file``."""

    @property
    def mandatory(self) -> bool:
        return self.level == EnforcementLevel.MANDATORY.value

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else self.file


def exit_code(violations: Iterable[Violation]) -> int:
    """1 when any violation is mandatory (the CLI would fail the update), else 0."""
    return 1 if any(v.mandatory for v in violations) else 0


CONFIG_RULE_ID = "stack-config-invalid"


CONFIG_RULE_DESCRIPTION = ("The stack configuration must pass gpu-platform's validation (the message names the config "
                           "path, the bad value and what is allowed); until it does nothing is synthesized, so no "
                           "policy has run.")
