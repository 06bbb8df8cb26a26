"""Run inside an isolated virtualenv that holds one inference server's released wheel (installed without its heavy
dependencies): build the server's own argparse parser and either dump every option it declares or read command
lines with it. Standalone on purpose (the server's environment has no gpu-platform): ``gpuplatform.server_parsers``
builds that environment and runs this file there.

    python server_parsers_probe.py dump  <vllm|sglang>          -> JSON table of every option, on stdout
    python server_parsers_probe.py parse <vllm|sglang> < argvs  -> JSON list of readings (accepted, values, error)

Modules the server imports that are not installed (torch, transformers, CUDA kernels) are replaced by inert stand-ins
at import time: the parser is plain argparse and never calls them; a stand-in that a parser did depend on would
show as a difference in the differential test (tests/gpuplatform/test_server_parsers.py).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import sys
import types

REAL_ROOTS = {"vllm", "sglang"}
ABSENT = {"libtpu", "torch_xla", "transformers_neuronx", "neuronx_distributed", "habana_frameworks", "intel_extension_for_pytorch",
          "oneccl_bindings_for_pytorch", "amdsmi", "torch_npu", "vllm_hpu_extension"}
"""Accelerator runtimes a server probes for to pick its platform: left absent (an ImportError), as on a CPU host."""


class _StubMeta(type):
    def __new__(mcls, name, bases, ns, **kwargs):
        return super().__new__(mcls, name, bases, ns)

    def __init__(cls, name, bases, ns, **kwargs):
        super().__init__(name, bases, ns)

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub(f"{cls.__name__}.{name}")

    def __call__(cls, *args, **kwargs):
        if not cls.__dict__.get("_stub"):
            return type.__call__(cls, *args, **kwargs)  # a real class built on a stand-in
        if len(args) == 1 and not kwargs and callable(args[0]) and not getattr(args[0], "_stub", False):
            return args[0]  # used as a decorator
        return _stub(cls.__name__ + "()")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __bool__(cls):
        return not cls.__dict__.get("_stub")

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __int__(cls):
        return 0

    def __index__(cls):
        return 0

    def __float__(cls):
        return 0.0

    def __lt__(cls, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __add__(cls, other):
        return other if isinstance(other, str) else cls

    def __radd__(cls, other):
        return other if isinstance(other, str) else cls

    def __str__(cls):
        return ""

    def __enter__(cls):
        return cls

    def __exit__(cls, *exc):
        return False

    def __mro_entries__(cls, bases):
        return (cls,)


def _any_schema(cls, source, handler):
    from pydantic_core import core_schema  # a stand-in used as a pydantic field type validates anything
    return core_schema.any_schema()


def _stub(name: str):
    # ``name``: code that asks a stand-in object for its name gets a string (sglang's custom-op registry)
    return _StubMeta(name, (), {"_stub": True, "__module__": "stub", "name": "stub",
                                 "__get_pydantic_core_schema__": classmethod(_any_schema)})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name == "__version__":
            return "0.0.0"
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []  # a package: its submodules are stand-ins too
        return module

    def exec_module(self, module):
        return None


class _StubFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: any module no real finder found, outside the server's own package."""
    stubbed: set = set()

    def find_spec(self, fullname, path=None, target=None):
        root = fullname.split(".")[0]
        if root in REAL_ROOTS or root.startswith(tuple(ABSENT)) or root in sys.stdlib_module_names or root.startswith("_"):
            return None
        if root != fullname and not isinstance(sys.modules.get(root), _StubModule):
            return None  # a module of an installed package: its own ImportError stands
        self.stubbed.add(fullname.split(".")[0])
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


class _NativeFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: the server's compiled kernels (``vllm._C``, ``vllm._moe_C``), which load
    libtorch, are stand-ins too."""

    def find_spec(self, fullname, path=None, target=None):
        last = fullname.rsplit(".", 1)[-1]
        if fullname.split(".")[0] in REAL_ROOTS and last.startswith("_") and last.endswith("_C"):
            _StubFinder.stubbed.add(fullname)
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


def _install_stubs() -> None:
    if any(isinstance(f, _StubFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _NativeFinder())
    sys.meta_path.append(_StubFinder())
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ.setdefault("SGLANG_IS_IN_CI", "false")


# --- the servers' parsers, built as their entry points build them -------------------------------------------------

def vllm_parsers() -> dict:
    """``vllm serve`` (the CLI's top-level parser with its serve subcommand, vllm/entrypoints/cli/main.py) and
    ``python -m vllm.entrypoints.openai.api_server`` (the official image's entrypoint: api_server.py __main__)."""
    import vllm.platforms
    # the images run on CUDA: the defaults that follow the platform (``--device auto``) are CUDA's, with no GPU
    # to look at here
    vllm.platforms.resolve_current_platform_cls_qualname = lambda: "vllm.platforms.cuda.CudaPlatform"
    from vllm.entrypoints.cli import serve as serve_mod
    from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve_cmd = serve_mod.ServeSubcommand()
    serve = serve_cmd.subparser_init(subparsers)
    api = make_arg_parser(FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server."))
    return {"serve": (top, serve, ["serve"], validate_parsed_serve_args),
            "api_server": (api, api, [], validate_parsed_serve_args)}


def sglang_parsers() -> dict:
    """``python -m sglang.launch_server`` (sglang/srt/server_args.py prepare_server_args: a plain ArgumentParser
    with ServerArgs.add_cli_args)."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return {"launch_server": (parser, parser, [], None)}


PARSERS = {"vllm": vllm_parsers, "sglang": sglang_parsers}


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and type(value).__module__ != "stub":  # an Enum
        return _jsonable(value.value)
    return repr(value)


def _type_name(t) -> str:
    if t is None:
        return ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or type(t).__name__
    mod = getattr(t, "__module__", "") or ""
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def _type_kind(action) -> dict:
    """What the option's ``type`` does to its text, probed rather than guessed: the callable's name and its answers
    to a few texts (so the table shows, for example, that ``optional_type(int)`` reads ``None`` as None)."""
    t = action.type
    out = {"type": _type_name(t)}
    if t is None or not callable(t) or t is str:
        return out
    chain, inner = [], t
    while True:  # a type built by a factory (vLLM's optional_type(parse_type(json.loads))): what it wraps, in turn
        cells = [c.cell_contents for c in (getattr(inner, "__closure__", None) or ()) if callable(c.cell_contents)]
        if not cells:
            break
        inner = cells[0]
        chain.append(_type_name(inner))
    if chain:
        out["type_of"] = chain
    answers = {}
    for text in ("1", "0", "-1", "2.5", "1e3", "1_000", "0x10", " 3", "None", "none", "true", "abc", "", "{}",
                 '{"a": 1}', "1k"):
        try:
            value = t(text)
            if value is None or isinstance(value, (bool, int, float, str, list, dict)):
                answers[text] = {"value": _jsonable(value)}
            else:  # an object of the server's own classes: only that it was read
                answers[text] = {"object": type(value).__name__}
        except Exception as e:  # noqa: BLE001 - any failure is what argparse reports as an invalid value
            answers[text] = {"error": type(e).__name__}
    out["probe"] = answers
    return out


_BUILT: dict = {}


def _parsers(server: str) -> dict:
    _install_stubs()
    if server not in _BUILT:
        with contextlib.redirect_stdout(sys.stderr):  # the server's logger writes to stdout
            _BUILT[server] = PARSERS[server]()
    return _BUILT[server]


def dump(server: str) -> dict:
    parsers = _parsers(server)
    out = {"server": server, "entrypoints": {}}
    for entry, (top, parser, prefix, _) in parsers.items():
        options = []
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction):
                kind = "help"
            else:
                kind = type(a).__name__
            row = {
                "dest": a.dest,
                "option_strings": list(a.option_strings),
                "action": kind,
                "nargs": a.nargs if not isinstance(a.nargs, int) else int(a.nargs),
                "const": _jsonable(a.const),
                "default": _jsonable(a.default) if a.default is not argparse.SUPPRESS else "==SUPPRESS==",
                "choices": [_jsonable(c) for c in a.choices] if a.choices is not None else None,
                "required": bool(a.required),
                "metavar": _jsonable(a.metavar),
                "deprecated": a in getattr(type(parser), "_deprecated", set()),
            }
            if kind == "DeprecatedAction":  # SGLang's: using the flag raises ValueError(help)
                row["message"] = a.help
            row.update(_type_kind(a))
            options.append(row)
        out["entrypoints"][entry] = {
            "prefix_argv": prefix,
            "allow_abbrev": parser.allow_abbrev,
            "prefix_chars": parser.prefix_chars,
            "parser_class": _type_name(type(parser)),
            "options": options,
        }
    out["python"] = sys.version.split()[0]
    out["stubbed_imports"] = sorted(_StubFinder.stubbed)
    return out


def parse(server: str, argvs: list) -> list:
    """Each command line as the server's entry point reads it: accepted (and the values of every option), or the
    error argparse (or the entry point's own check) stops with."""
    parsers = _parsers(server)
    results = []
    for item in argvs:
        entry, argv = item["entrypoint"], item["argv"]
        top, parser, prefix, validate = parsers[entry]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                ns = top.parse_args(prefix + list(argv))
                if validate is not None:
                    validate(ns)
        except SystemExit as e:
            lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            results.append({"accepted": False, "error": lines[-1] if lines else f"exit {e.code}"})
            continue
        except Exception as e:  # noqa: BLE001 - the entry point stops with it
            results.append({"accepted": False, "error": f"{type(e).__name__}: {e}"})
            continue
        values = {k: _jsonable(v) for k, v in vars(ns).items() if k not in ("dispatch_function", "subparser")}
        results.append({"accepted": True, "values": values})
    return results


def main() -> None:
    mode, server = sys.argv[1], sys.argv[2]
    if mode == "dump":
        json.dump(dump(server), sys.stdout, indent=None, sort_keys=True)
    elif mode == "parse":
        json.dump(parse(server, json.load(sys.stdin)), sys.stdout)
    elif mode == "both":  # the table and the readings, from one import of the server
        lines = json.load(sys.stdin)
        json.dump({"table": dump(server), "readings": parse(server, lines)}, sys.stdout)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
