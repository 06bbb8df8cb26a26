"""Raw config -> typed config: pydantic's errors as :class:`ConfigIssue` s with the camelCase paths of the stack
file."""
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from gpuplatform.catalogs.gpus import close_matches
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
        allowed = allowed_keys(err["loc"][:-1])
        near = close_matches(str(err["loc"][-1]), allowed)
        if near:
            return (f"unknown key (not a gpu-platform setting). Did you mean {', '.join(map(repr, near))}? "
                    f"Allowed here: {', '.join(allowed)}")
        if allowed:
            return f"unknown key (not a gpu-platform setting); allowed here: {', '.join(allowed)}"
        return "unknown key (not a gpu-platform setting; check the spelling against `gpuplatform schema`)"
    if err["type"] == "missing":
        return "required key is missing"
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return msg
    value = err.get("input")
    if isinstance(value, (dict, list)):
        return msg
    return f"{fmt(value)}: {msg}"


def _expand(annotation) -> list:
    """The types a value of ``annotation`` may have: Optional, unions and Annotated unwrapped."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _expand(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [t for arg in get_args(annotation) for t in _expand(arg)]
    return [annotation]


def _step(annotation, item) -> list:
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return _expand(get_args(annotation)[0]) if isinstance(item, int) else []
    if origin is dict:
        return _expand(get_args(annotation)[1])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(item, str):
        for name, field in annotation.model_fields.items():
            if item in (name, field.alias):
                return _expand(field.annotation)
        return [annotation]  # the tag of a tagged union, which pydantic inserts into the location
    return []


def allowed_keys(loc: tuple) -> list[str]:
    """The keys the stack file may use at ``loc`` (a pydantic error location), as the stack file spells them."""
    candidates = [PlatformConfig]
    for item in loc:
        candidates = [t for c in candidates for t in _step(c, item)]
    return sorted({field.alias or name for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)
                   for name, field in c.model_fields.items()})


def issues_of(errors: list[dict]) -> list[ConfigIssue]:
    """pydantic errors (locations from the namespace's root) as issues. A required key that a misspelt sibling
    key is close to is not reported again as missing: ``metirc`` gets "Did you mean 'metric'?", and the fix of
    that one key is the fix of both."""
    misspelt = {(tuple(e["loc"][:-1]), m) for e in errors if e["type"] == "extra_forbidden"
                for m in close_matches(str(e["loc"][-1]), allowed_keys(e["loc"][:-1]))}
    return [ConfigIssue(_path(e["loc"]), _pydantic_message(e)) for e in errors
            if not (e["type"] == "missing" and (tuple(e["loc"][:-1]), e["loc"][-1]) in misspelt)]


def parse(raw: dict[str, Any]) -> PlatformConfig:
    """Raw ``gpu-platform`` namespace (camelCase keys, YAML values) -> typed config, or ConfigError."""
    try:
        return PlatformConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(issues_of(exc.errors())) from None


def _raw_parent(raw: Any, loc: tuple) -> Any:
    """The mapping of the raw config at a pydantic location (the tags pydantic inserts after tagged unions
    skipped), or None."""
    node = raw
    for i, item in enumerate(loc):
        if i > 0 and isinstance(item, str) and loc[i - 1] in _UNION_FIELDS and not (
                isinstance(node, dict) and item in node):
            continue
        if isinstance(node, dict) and item in node:
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            node = node[item]
        else:
            return None
    return node


def without_unknown_keys(raw: dict[str, Any], errors: list[dict]) -> tuple[dict[str, Any], set[str]]:
    """``raw`` with each unknown key replaced by the key it is closest to (``maxNode`` -> ``maxNodes``, when that
    key is not set beside it) or dropped, so that the values of a stack with a misspelt key are judged in the same
    run; and the stack paths that now hold a guessed key, whose own findings would be about the guess. Only
    unknown keys are repaired: a value pydantic refuses has nothing to stand for it."""
    import copy

    fixed = copy.deepcopy(raw)
    guessed: set[str] = set()
    for e in errors:
        if e["type"] != "extra_forbidden":
            continue
        parent = _raw_parent(fixed, tuple(e["loc"][:-1]))
        key = e["loc"][-1]
        if not isinstance(parent, dict) or key not in parent:
            continue
        value = parent.pop(key)
        near = [k for k in close_matches(str(key), allowed_keys(e["loc"][:-1])) if k not in parent]
        if near:
            parent[near[0]] = value
            guessed.add(_path(tuple(e["loc"][:-1]) + (near[0],)))
    return fixed, guessed


def provider_conflicts(raw: dict[str, Any], settings: dict[str, Any]) -> list[ConfigIssue]:
    """A provider setting that contradicts the stack's own: ``alicloud:region`` naming another region than
    ``cluster.region`` would silently do nothing (the stack's provider is built from ``cluster.region``), so the
    stack would not run where its file says."""
    region = settings.get("alicloud:region")
    cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
    ours = cluster.get("region")
    if region is None or ours is None or str(region) == str(ours):
        return []
    return [ConfigIssue("cluster.region", f"{ours!r}, but the stack file also sets alicloud:region {region!r}; "
                        "every Alibaba resource of the stack goes to cluster.region (one explicit provider, which "
                        "does not read alicloud:region); allowed: remove alicloud:region, or set both to the same "
                        "region")]
