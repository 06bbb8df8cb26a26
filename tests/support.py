"""Shared test helpers: stack files, offline synthesis, resource lookup."""
import copy
from pathlib import Path

from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.synth import stack_config_from_namespace, synthesize

REPO = Path(__file__).resolve().parent.parent
STACKS = sorted(p.stem.removeprefix("Pulumi.") for p in (REPO / "stacks").glob("Pulumi.*.yaml"))


def stack_raw(stack: str) -> dict:
    return copy.deepcopy(namespace_from_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml"))


def synth(raw: dict):
    return synthesize(stack_config_from_namespace(raw))


def of_type(records, type_token: str) -> list:
    return [r for r in records if r.type == type_token]


def one(records, type_token: str, name: str | None = None):
    found = [r for r in of_type(records, type_token) if name is None or r.name == name]
    assert len(found) == 1, f"expected one {type_token} {name or ''}, got {[r.name for r in found]}"
    return found[0]
