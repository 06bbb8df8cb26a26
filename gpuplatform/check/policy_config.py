"""A policy-pack config (``--policy-pack-config`` format: ``{"all": "mandatory", "<policy>": {"enforcementLevel":
…, <props>}}``) read as the engine reads it, and the settings ``--kube-version`` and ``--strict`` add to it."""
from typing import Any, Mapping, Optional

from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.policies.registry import EnforcementLevel, PolicyDef, strict_config


LEVELS = {level.value: level for level in EnforcementLevel}


def _policy_config(pdef: PolicyDef, config: Optional[Mapping[str, Any]]) -> tuple[EnforcementLevel, dict]:
    """Effective level and properties of one policy under a policy-pack config."""
    level, props = pdef.level, {}
    for key in ("all", pdef.id):
        entry = (config or {}).get(key)
        if isinstance(entry, str):
            level = LEVELS[entry]
        elif isinstance(entry, Mapping):
            if "enforcementLevel" in entry:
                level = LEVELS[entry["enforcementLevel"]]
            if key == pdef.id:
                props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
    return level, props


def with_kubernetes_version(config: Optional[Mapping[str, Any]], version: str) -> dict[str, Any]:
    """``config`` with ``kubernetesVersion`` set for every policy that reads the target cluster's version (the
    API-version policies); it wins over the version a checked GpuPlatform registers."""
    out = dict(config or {})
    for pdef in POLICY_DEFS:
        if "kubernetesVersion" in pdef.config:
            entry = out.get(pdef.id)
            if isinstance(entry, str):
                entry = {"enforcementLevel": entry}
            out[pdef.id] = {**(entry or {}), "kubernetesVersion": version}
    return out


def active_policies(config: Optional[Mapping[str, Any]] = None) -> int:
    """How many policies of the pack run under ``config`` (the disabled ones do not)."""
    return sum(_policy_config(p, config)[0] != EnforcementLevel.DISABLED for p in POLICY_DEFS)


def with_strict(config: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """``config`` with every hardening policy raised to mandatory (what ``--strict`` and ``policies/strict.json``
    do); an explicit setting for a policy in ``config`` still wins."""
    out: dict[str, Any] = dict(strict_config())
    for key, value in (config or {}).items():
        if key in out and isinstance(value, Mapping) and "enforcementLevel" not in value:
            out[key] = {"enforcementLevel": out[key], **value}
        else:
            out[key] = value
    return out
