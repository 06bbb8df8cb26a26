"""Which optional part of gpu-platform a module belongs to, for the error a missing one raises.

The base install is the policy pack's (pulumi, pulumi-policy, pyyaml); everything else comes with an extra of
pyproject.toml, named by what a user runs. tests/project/test_dependencies.py keeps this table and pyproject.toml in step.
"""
from __future__ import annotations

from typing import Optional

EXTRA_OF_MODULE = {
    "pydantic": "stack",
    "pulumi_kubernetes": "stack",
    "kubernetes_validate": "stack",
    "jsonschema": "stack",
    "referencing": "stack",
    "pulumi_alicloud": "ack",
    "kubernetes": "verify",
    "matplotlib": "plot",
    "helm": "charts",
}
"""Top-level module -> the extra that installs its distribution."""

WHAT_NEEDS_IT = {
    "stack": "the components (a stack or a program: plan, check --stack/--project, simulate)",
    "ack": "an Alibaba Cloud ACK stack",
    "verify": "verify (the Kubernetes API client)",
    "plot": "simulate --plot",
    "charts": "check --charts (the Helm engine)",
}


def missing_extra(exc: BaseException) -> Optional[str]:
    """The message for an import of an optional module that is not installed; None for any other error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    extra = EXTRA_OF_MODULE.get(exc.name.split(".")[0])
    if extra is None:
        return None
    return (f"{exc.name.split('.')[0]} is not installed: {WHAT_NEEDS_IT[extra]} needs the {extra!r} extra; "
            f"pip install 'gpu-platform[{extra}]' (or install the release with it, e.g. "
            f"'gpu-platform[{extra}] @ <where you install it from>')")
