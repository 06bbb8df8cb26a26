"""Reading the ``gpu-platform`` namespace from a stack file or from the running Pulumi program."""
import json
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.components.config import PROJECT, PlatformConfig
from gpuplatform.components.errors import ConfigError, ConfigIssue
from gpuplatform.components.validation import load

SECRET_PLACEHOLDER = "offline-placeholder-secret"


def namespace_from_stack_file(path: str | Path) -> dict[str, Any]:
    """``config:`` of a ``Pulumi.<stack>.yaml`` -> ``{key: value}`` of our namespace.

    Encrypted values (``{secure: v1:…}``) only the Pulumi CLI can decrypt; offline they become a placeholder.
    Keys of other namespaces (``alicloud:region``, ``kubernetes:…``) belong to providers and are ignored.
    """
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError([ConfigIssue("(file)", f"cannot read {path}: {exc}")]) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise ConfigError([ConfigIssue("(file)", f"{path} is not a stack file: expected a mapping with 'config:'")])
    out = {}
    for key, value in (doc.get("config") or {}).items():
        ns, _, name = str(key).partition(":")
        if ns == PROJECT and name:
            out[name] = SECRET_PLACEHOLDER if isinstance(value, dict) and set(value) == {"secure"} else value
    return out


def namespace_from_pulumi() -> tuple[dict[str, Any], set[str]]:
    """Our namespace from the running program's config (CLI or mocks), and which keys are secret."""
    from pulumi.runtime import config as rc

    keys = {k for k in list(rc.CONFIG.get()) + list(rc.get_config_env()) if k.startswith(f"{PROJECT}:")}
    raw, secret = {}, set()
    for key in sorted(keys):
        value = rc.get_config(key)
        name = key.split(":", 1)[1]
        if isinstance(value, str):
            try:
                parsed = json.loads(value)
                value = parsed if isinstance(parsed, (dict, list, bool, int, float)) else value
            except json.JSONDecodeError:
                pass
        raw[name] = value
        if rc.is_config_secret(key):
            secret.add(name)
    return raw, secret


def load_stack_file(path: str | Path) -> PlatformConfig:
    return load(namespace_from_stack_file(path))
