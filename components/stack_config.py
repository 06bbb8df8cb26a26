"""Reading the ``gpu-platform`` namespace from a stack file or from the running Pulumi program.

Secrets: ``kubeconfig`` and ``grafanaAdminPassword`` must be stored encrypted (``pulumi config set --secret``);
written in plain text they are an error that does not repeat the value. Their values are never parsed (a
digits-only password stays a string) and go to resources only inside ``pulumi.Output.secret``. No other key may
be secret: its values become node pool settings and Kubernetes objects that anyone who can read the cluster
sees, so the package refuses them rather than let a secret out (credentials for workloads belong in Kubernetes
Secrets referenced by ``workloads[].secretEnv``).
"""
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.components.config import PROJECT, SECRET_KEYS, PlatformConfig
from gpuplatform.components.errors import ConfigError, ConfigIssue
from gpuplatform.components.validation import load
# provider_conflicts lives in validation/parsing.py, which load runs; named here as before
from gpuplatform.components.validation.parsing import provider_conflicts  # noqa: F401

SECRET_PLACEHOLDER = "offline-placeholder-secret"


def is_secure(value: Any) -> bool:
    """An encrypted stack-file value: ``{secure: v1:…}``."""
    return isinstance(value, dict) and set(value) == {"secure"}


def _secure_paths(value: Any, path: str) -> list[str]:
    if is_secure(value):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _secure_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secure_paths(v, f"{path}[{i}]")]
    return []


def plain_text_secret(name: str) -> ConfigIssue:
    return ConfigIssue(name, f"is stored in plain text (value not shown); a secret belongs encrypted in the stack: "
                       f"pulumi config set --secret {PROJECT}:{name}")


def secret_not_allowed(path: str) -> ConfigIssue:
    return ConfigIssue(path, "is marked secret (value not shown), but it becomes node pool settings and Kubernetes "
                       "objects anyone who can read the cluster sees; allowed secrets: "
                       f"{', '.join(SECRET_KEYS)} (credentials of a workload: a Kubernetes Secret referenced "
                       "by workloads[].secretEnv)")


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
    out, issues = {}, []
    for key, value in (doc.get("config") or {}).items():
        ns, _, name = str(key).partition(":")
        if ns != PROJECT or not name:
            continue
        if name in SECRET_KEYS:
            if is_secure(value):
                out[name] = SECRET_PLACEHOLDER
            elif value is not None:
                issues.append(plain_text_secret(name))
            continue
        issues += [secret_not_allowed(p) for p in _secure_paths(value, name)]
        out[name] = value
    if issues:
        raise ConfigError(issues)
    return out


def _config_keys() -> list[str]:
    """Names of our namespace's keys: ``pulumi.Config`` reads one key at a time and cannot list them."""
    from pulumi.runtime import config as rc

    prefix = f"{PROJECT}:"
    keys = {k for k in list(rc.CONFIG.get()) + list(rc.get_config_env()) if k.startswith(prefix)}
    return sorted(k[len(prefix):] for k in keys)


def namespace_from_pulumi() -> dict[str, Any]:
    """Our namespace from the running program's config (Pulumi CLI or mocks), read through ``pulumi.Config``."""
    import pulumi
    from pulumi.runtime.config import is_config_secret

    config = pulumi.Config(PROJECT)
    raw, issues = {}, []
    for name in _config_keys():
        secret = is_config_secret(config.full_key(name))
        if name in SECRET_KEYS:
            if not secret:
                issues.append(plain_text_secret(name))
            raw[name] = config.get(name)  # a string as stored: never parsed, so "123456" stays a password
            continue
        if secret:
            issues.append(secret_not_allowed(name))
            continue
        try:
            raw[name] = config.get_object(name)
        except pulumi.ConfigTypeError:
            raw[name] = config.get(name)  # not JSON: the typed config names the key and what it expects
    if issues:
        raise ConfigError(issues)
    return raw


PROVIDER_KEYS = ("alicloud:region",)
"""Provider settings of a stack file that the stack's own config decides instead: every Alibaba resource and
lookup goes to one explicit provider built from ``cluster.region``, which does not read them."""


def provider_settings_from_stack_file(path: str | Path) -> dict[str, Any]:
    """The provider settings (``PROVIDER_KEYS``) a stack file writes, as they would reach the program."""
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}  # namespace_from_stack_file reports an unreadable file
    config = doc.get("config") if isinstance(doc, dict) else None
    return {k: config[k] for k in PROVIDER_KEYS if isinstance(config, dict) and config.get(k) is not None}


def provider_settings_from_pulumi() -> dict[str, Any]:
    import pulumi

    out = {}
    for key in PROVIDER_KEYS:
        namespace, _, name = key.partition(":")
        value = pulumi.Config(namespace).get(name)
        if value is not None:
            out[key] = value
    return out


def load_stack_file(path: str | Path) -> PlatformConfig:
    return load(namespace_from_stack_file(path), provider_settings_from_stack_file(path))
