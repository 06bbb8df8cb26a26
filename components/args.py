"""Checking a component's args the way a stack file is checked: every problem at once, each naming the component,
the key, the value and what is allowed, raised as ``pulumi.RunError`` (the Python language host prints a
``RunError``'s message without a traceback: pulumi/pulumi ``sdk/python/lib/pulumi/runtime/stack.py``
``run_in_stack``) before the component registers anything.

Args are ``TypedDict`` s, so the keys, whether each is required and its type are read from the class itself:
the documentation a consumer reads and the check cannot drift apart.
"""
import difflib
import types
import typing
from collections.abc import Mapping
from typing import Any, Optional, Union

import pulumi

from gpuplatform.components.errors import ConfigError, ConfigIssue, fmt, one_of


class ArgsIssue(ConfigIssue):
    """A problem in a component's args: the path starts at the component, not at the stack file."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ArgsError(ConfigError):
    """All problems of one component's args (a :class:`ConfigError`, so the CLI exits 2 on it)."""

    def render(self) -> str:
        n = len(self.issues)
        return "\n".join([f"invalid component args ({n} problem{'s' if n != 1 else ''}):",
                          *(f"  - {issue}" for issue in self.issues)])


def component_label(type_name: str, name: str) -> str:
    """``GpuNodePool 'a10'``: how messages name a component."""
    return f"{type_name} {name!r}"


def did_you_mean(value: str, choices) -> str:
    near = difflib.get_close_matches(value, list(choices), n=2, cutoff=0.6)
    if not near:
        # snake_case for camelCase and back are the most common slips between args and stack files
        flat = {c.replace("_", "").lower(): c for c in choices}
        hit = flat.get(value.replace("_", "").lower())
        near = [hit] if hit else []
    return f"; did you mean {one_of(repr(n) for n in near)}?" if near else ""


def _type_text(tp) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        parts = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(dict.fromkeys(_type_text(a) for a in parts))
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(tp, "__name__", str(tp))


def _accepts(tp, value) -> bool:
    """Whether ``value`` has the annotated type. Pulumi outputs and other awaitables stand for any input type (their
    value is only known at deployment); generic containers are checked one level deep."""
    if isinstance(value, pulumi.Output) or hasattr(value, "__await__"):
        return True
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return True
    if origin is typing.Annotated:
        return _accepts(typing.get_args(tp)[0], value)
    if origin in (Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if tp is type(None):
        return value is None
    if origin in (list, tuple, typing.Sequence):
        if not isinstance(value, (list, tuple)):
            return False
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return all(_accepts(item, v) for v in value)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            return False
        args = typing.get_args(tp)
        return all(_accepts(args[1], v) for v in value.values()) if len(args) == 2 else True
    if origin is not None:
        return isinstance(value, origin)
    if isinstance(tp, type):
        if tp is bool:
            return isinstance(value, bool)
        if tp is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if tp is float:
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if typing.is_typeddict(tp):
            return isinstance(value, Mapping)
        return isinstance(value, tp)
    return True  # a forward reference or an exotic annotation: left to the component's own checks


def _shown(value) -> str:
    if isinstance(value, pulumi.Resource):
        return f"a {type(value).__name__}"
    if isinstance(value, (dict, list, tuple)):
        return f"a {type(value).__name__}"
    return fmt(value)


def _hints(spec: type) -> dict:
    """The keys and types of an args ``TypedDict``; ``pulumi.Input`` names ``Output`` by a forward reference."""
    return typing.get_type_hints(spec, localns={"Output": pulumi.Output, "Resource": pulumi.Resource, "T": Any})


def check_args(type_name: str, name: str, args: Any, spec: type) -> list[ArgsIssue]:
    """Unknown keys (with "did you mean"), missing required keys and values of the wrong type in ``args``, checked
    against the ``TypedDict`` ``spec``."""
    label = component_label(type_name, name)
    if not isinstance(args, Mapping):
        return [ArgsIssue(f"{label} args", f"{_shown(args)}: expected a dict of {spec.__name__} keys: "
                                            f"{one_of(sorted(_hints(spec)))}")]
    hints = _hints(spec)
    required = getattr(spec, "__required_keys__", frozenset())
    out = []
    for key, value in args.items():
        if key not in hints:
            out.append(ArgsIssue(f"{label} args.{key}", f"unknown key{did_you_mean(str(key), hints)}; allowed: "
                                                        f"{one_of(sorted(hints))} (see {spec.__name__})"))
        elif not _accepts(hints[key], value):
            out.append(ArgsIssue(f"{label} args.{key}", f"{_shown(value)}: expected {_type_text(hints[key])}"))
    for key in sorted(required - set(args)):
        out.append(ArgsIssue(f"{label} args.{key}", f"required key is missing (expected {_type_text(hints[key])})"))
    return out


def raise_for(issues: list) -> None:
    """Stop the program with every issue, before anything is registered."""
    if issues:
        raise pulumi.RunError(ArgsError(list(issues)).render())


def reprefix(issues: list[ConfigIssue], mapping: dict[str, str]) -> list[ArgsIssue]:
    """Stack-file paths of a config a component assembled from its args (``workloads[0].gpu``) -> the args' own
    (``InferenceService 'x' args.workload.gpu``): a consumer never wrote a stack file."""
    out = []
    for issue in issues:
        path = issue.path
        for prefix, replacement in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
            if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
                path = replacement + path[len(prefix):]
                break
        out.append(ArgsIssue(path, issue.message))
    return out


def stop_on_config_error(exc: ConfigError, mapping: dict[str, str]) -> None:
    raise pulumi.RunError(ArgsError(reprefix(exc.issues, mapping)).render()) from None


def read_project_config(spec: type, namespace: Optional[str] = None) -> dict:
    """A consumer project's own config keys, read through ``pulumi.Config`` and checked against the ``TypedDict``
    ``spec`` like component args: an unknown key (a misspelling) gets "did you mean", a missing required key and a
    value of the wrong type are named with what is allowed, and ``pulumi.RunError`` stops the program before
    anything is registered. Values are parsed as YAML/JSON objects where they are (``pulumi config set --path``);
    secret keys stay secret (``pulumi.Output.secret``)."""
    from pulumi.runtime import config as rc
    from pulumi.runtime.config import is_config_secret

    config = pulumi.Config(namespace)
    prefix = f"{config.name}:"
    keys = sorted({k[len(prefix):] for k in list(rc.CONFIG.get()) + list(rc.get_config_env())
                   if k.startswith(prefix)})
    hints = _hints(spec)
    values: dict = {}
    for key in keys:
        if hints.get(key) is str:
            value = config.get(key)  # "1.30" stays the string it was set as
        else:
            try:
                value = config.get_object(key)
            except pulumi.ConfigTypeError:
                value = config.get(key)
            if isinstance(value, str):
                value = _scalar(value)
        values[key] = pulumi.Output.secret(value) if is_config_secret(config.full_key(key)) else value
    issues = [ArgsIssue(i.path.replace("args.", f"{config.name}:", 1).replace(
        component_label("project", config.name) + " ", ""), i.message)
        for i in check_args("project", config.name, values, spec)]
    if issues:
        raise pulumi.RunError(ArgsError(issues).render().replace("invalid component args",
                                                                 "invalid project configuration"))
    return values


def _scalar(text: str):
    """``pulumi config set replicas 3`` stores the string "3": read numbers and booleans as YAML would."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


__all__ = ["ArgsError", "ArgsIssue", "check_args", "raise_for", "read_project_config"]
