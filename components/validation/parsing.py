"""Raw config -> typed config: pydantic's errors as :class:`ConfigIssue` s with the camelCase paths of the stack
file."""
from typing import Any

from pydantic import ValidationError

from gpuplatform.components.config import SECRET_KEYS, PlatformConfig
from gpuplatform.components.errors import ConfigError, ConfigIssue, fmt

_UNION_FIELDS = {"cluster", "sharing"}


def _path(loc: tuple) -> str:
    parts: list[str] = []
    for i, item in enumerate(loc):
        if i > 0 and isinstance(item, str) and loc[i - 1] in _UNION_FIELDS:
            continue  # pydantic inserts the discriminator value of tagged unions
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]" if parts else f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts) or "(root)"


def _pydantic_message(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["loc"][:1] and err["loc"][0] in SECRET_KEYS:
        return f"{msg} (value not shown: it is a secret)"
    if err["type"] == "extra_forbidden":
        return "unknown key (not a gpu-platform setting; check the spelling against `gpuplatform schema`)"
    if err["type"] == "missing":
        return "required key is missing"
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return msg
    value = err.get("input")
    if isinstance(value, (dict, list)):
        return msg
    return f"{fmt(value)}: {msg}"


def parse(raw: dict[str, Any]) -> PlatformConfig:
    """Raw ``gpu-platform`` namespace (camelCase keys, YAML values) -> typed config, or ConfigError."""
    try:
        return PlatformConfig.model_validate(raw)
    except ValidationError as exc:
        issues = [ConfigIssue(_path(e["loc"]), _pydantic_message(e)) for e in exc.errors()]
        raise ConfigError(issues) from None
