"""A server's command line read as the server itself reads it: its flag table (``catalogs/server_flags/<server>-
<version>.json``, generated from the server's own parser by ``gpuplatform/server_parsers.py``) rebuilt into an
argparse parser, so spellings, prefixes (argparse ``allow_abbrev``), ``--no-<flag>`` (``BooleanOptionalAction``), a
value given to a switch, choices, types, and unknown or ambiguous flags are accepted or refused exactly as the
server's entry point does, with argparse's own message.

What the table cannot carry is written here with its source line: the type functions the parsers name (probed in
the table, and the tests hold each one to the table's answers), vLLM's pre-processing of the line
(``FlexibleArgumentParser.parse_args``) and its entry point's checks after parsing.

The tables' argparse is the CPython one of the interpreter that generated them (the table's ``provenance.python``);
the reading uses the running interpreter's. The servers' images run CPython 3.12, whose argparse reads the lines
these tables cover the same way.
"""
from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

# the tables the grammar rebuilds; their readers also name them through this module
from gpuplatform.catalogs.flag_tables import TABLES_DIR, flag_table, known_versions  # noqa: F401
from gpuplatform.catalogs.server_profiles import PROFILES

TITLES = {name: p.title for name, p in PROFILES.items()}

ENTRYPOINTS: dict[str, dict[str, str]] = {name: dict(p.entrypoints) for name, p in PROFILES.items()
                                          if not p.native_parser}
"""Each argparse table's entry points and the command that runs it (each server's profile module)."""

IMAGE_ENTRYPOINTS: dict[str, str] = {name: p.image_entrypoint for name, p in PROFILES.items() if p.image_entrypoint}
"""The entry point an official image starts when the workload sets no ``command`` (each profile module cites its
image's ENTRYPOINT: vLLM's runs ``python3 -m vllm.entrypoints.openai.api_server``, TGI's
``text-generation-launcher``; SGLang's image sets none, so its workloads name ``python3 -m sglang.launch_server``;
Triton's runs the command given)."""

_MODULES = {"vllm.entrypoints.openai.api_server": ("vllm", "api_server"),
            "sglang.launch_server": ("sglang", "launch_server")}


def entrypoint_of(server: str, command: list[str]) -> Optional[tuple[str, int]]:
    """(entry point, how many words of ``command`` name it) for a command that starts ``server``: ``vllm serve``,
    ``python3 -m vllm.entrypoints.openai.api_server``, ``python3 -m sglang.launch_server`` (``exec`` and a path
    before the program are allowed); None for any other command."""
    i = 1 if command[:1] == ["exec"] else 0
    words = [w.rsplit("/", 1)[-1] if n == i else w for n, w in enumerate(command)]
    if server == "vllm" and words[i:i + 2] == ["vllm", "serve"]:
        return "serve", i + 2
    if re.fullmatch(r"python(3(\.\d+)?)?", words[i] if len(words) > i else "") and words[i + 1:i + 2] == ["-m"] \
            and len(words) > i + 2 and _MODULES.get(words[i + 2], ("", ""))[0] == server:
        return _MODULES[words[i + 2]][1], i + 3
    return None


UNKNOWN = "\x00unknown\x00"
"""Stands in for a value the line takes from a variable this reading cannot expand (``$(SECRET_VAR)``): every type
accepts it and reads it as :data:`UNKNOWN_VALUE`."""


class _Unknown:
    def __repr__(self) -> str:
        return "<set from a variable>"


UNKNOWN_VALUE = _Unknown()


def version_text(version: tuple) -> str:
    text = ".".join(map(str, version[:3]))
    return text + (f".post{version[3]}" if len(version) > 3 else "")


# --- the type functions the parsers name -----------------------------------------------------------------------

def _vllm_nullable_kvs(val: str) -> dict:
    """vllm==0.9.2 engine/arg_utils.py:92-121: ``k=1,l=2`` -> {"k": 1, "l": 2}; keys lower-cased."""
    out = {}
    for item in val.split(","):
        parts = [part.lower().strip() for part in item.split("=")]
        if len(parts) != 2:
            raise argparse.ArgumentTypeError("Each item should be in the form KEY=VALUE")
        key, value = parts
        try:
            out[key] = int(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"Failed to parse value of item {key}={value}") from exc
    return out


def _vllm_parse_type(inner: Callable) -> Callable:
    """vllm==0.9.2 engine/arg_utils.py:57-68: ``json.loads`` of a ``{...}`` text, else ``nullable_kvs``."""
    def read(val: str):
        try:
            if inner is json.loads and not re.match("^{.*}$", val):
                return _vllm_nullable_kvs(val)
            return inner(val)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"Value {val} cannot be converted to {inner}.") from e
    return read


def _vllm_optional_type(inner: Callable) -> Callable:
    """vllm==0.9.2 engine/arg_utils.py:71-79: ``""`` and ``None`` read as None."""
    def read(val: str):
        if val == "" or val == "None":
            return None
        return _vllm_parse_type(inner)(val)
    return read


def _vllm_union_dict_and_str(val: str):
    """vllm==0.9.2 engine/arg_utils.py:82-85."""
    if not re.match("^{.*}$", val):
        return str(val)
    return _vllm_optional_type(json.loads)(val)


def _vllm_human_readable_int(value: str) -> int:
    """vllm==0.9.2 engine/arg_utils.py:1753-1790: ``25.6k`` = 25600 (decimal k/m/g), ``1K`` = 1024 (binary K/M/G),
    a decimal number with a binary suffix is refused, else ``int()``."""
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9}
        binary = {"K": 2**10, "M": 2**20, "G": 2**30}
        number, suffix = match.groups()
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        if suffix in binary:
            try:
                return int(number) * binary[suffix]
            except ValueError as e:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean to use "
                    f"{number}{suffix.lower()} instead?") from e
    return int(value)


def _sglang_nullable_str(val: str):
    """sglang==0.5.4 srt/utils/common.py:2155-2158."""
    if not val or val == "None":
        return None
    return val


def _sglang_json_list_type(value: str):
    """sglang==0.5.4 srt/utils/common.py:3342-3348 (orjson: the JSON of RFC 8259, no NaN)."""
    try:
        return json.loads(value, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"Invalid JSON list: {value}. Please provide a valid JSON list.") from e


def _no_constant(name: str):
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


_PLAIN: dict[str, Callable] = {"str": str, "int": int, "float": float, "json.loads": json.loads,
                               "vllm.engine.arg_utils.union_dict_and_str": _vllm_union_dict_and_str,
                               "vllm.engine.arg_utils.human_readable_int": _vllm_human_readable_int,
                               "sglang.srt.utils.common.nullable_str": _sglang_nullable_str,
                               "sglang.srt.utils.common.json_list_type": _sglang_json_list_type}
_FACTORIES: dict[str, Callable] = {"vllm.engine.arg_utils.optional_type.<locals>._optional_type": _vllm_optional_type,
                                   "vllm.engine.arg_utils.parse_type.<locals>._parse_type": _vllm_parse_type}
OPAQUE_TYPES = ("vllm.engine.arg_utils._compute_kwargs.<locals>.parse_dataclass",)


def is_opaque(option: dict) -> bool:
    """Whether the option's value is one of the server's own objects (only whether it is accepted is known)."""
    if option.get("action") in OPAQUE_ACTIONS:
        return True
    return any(t in OPAQUE_TYPES for t in [option.get("type", "")] + list(option.get("type_of", ())))
"""Types whose reading needs the server's own classes (vLLM's ``--compilation-config`` and friends: a pydantic
dataclass): the text is taken as given, and only the grammar around it is judged."""


def _type_reader(name: str, inner: tuple = ()) -> Optional[Callable]:
    if not name:
        return None
    if name in _FACTORIES:
        return _FACTORIES[name](_type_reader(inner[0], inner[1:]) if inner else str)
    if name in _PLAIN:
        return _PLAIN[name]
    return str  # OPAQUE_TYPES, or a type a new table brings: its text as given


def type_reader(option: dict) -> Optional[Callable]:
    """The option's type as a function of its text (None: no conversion), accepting :data:`UNKNOWN`."""
    read = _type_reader(option.get("type", ""), tuple(option.get("type_of", ())))
    if read is None:
        return None

    def typed(text: str):
        if UNKNOWN in text:
            return UNKNOWN_VALUE
        return read(text)
    typed.__name__ = option.get("type", "").rsplit(".", 1)[-1].replace("<locals>", "") or "str"
    if option.get("type") in ("int", "float"):
        typed.__name__ = option["type"]  # argparse names it in "invalid int value"
    return typed


# --- the parser rebuilt ----------------------------------------------------------------------------------------

class Refused(Exception):
    """The server's entry point stops on the line: ``message`` as it says it, ``flag`` the flag it names."""

    def __init__(self, message: str, flag: str = ""):
        super().__init__(message)
        self.message = message
        self.flag = flag


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D102 - argparse's exit, as an exception
        raise Refused(message, _flag_of(message))

    def exit(self, status=0, message=None):  # noqa: A003
        raise Refused((message or "").strip() or f"exits with status {status}")


class _Help(argparse.Action):
    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        raise Refused(f"{option_string}: prints its help and exits, serving nothing", option_string or "")


class _SgLangDeprecated(argparse.Action):
    """sglang==0.5.4 srt/server_args.py:3791-3798: using the flag raises ValueError(its help)."""

    def __init__(self, option_strings, dest, nargs=0, message="", **kw):
        super().__init__(option_strings, dest, nargs=nargs, **kw)
        self.message = message

    def __call__(self, parser, namespace, values, option_string=None):
        raise Refused(self.message, option_string or "")


class _StoreList(argparse.Action):
    """SGLang's ``LoRAPathAction`` (sglang==0.5.4 srt/server_args.py:3771-3788): the values given, a ``{...}`` one
    read as JSON with ``lora_name`` and ``lora_path``."""

    def __call__(self, parser, namespace, values, option_string=None):
        out = []
        for item in values or []:
            item = item.strip()
            if item.startswith("{") and item.endswith("}"):
                obj = json.loads(item)
                if not ("lora_path" in obj and "lora_name" in obj):
                    raise Refused(f"{item!r} looks like a JSON str, but it does not contain 'lora_name' and "
                                  "'lora_path' keys.", option_string or "")
                out.append(obj)
            else:
                out.append(item)
        setattr(namespace, self.dest, out)


class _VllmLoRA(argparse.Action):
    """vllm==0.9.2 entrypoints/openai/cli_args.py:28-61 (``LoRAParserAction``): ``name=path`` or a JSON object of
    ``LoRAModulePath``'s fields (name, path, base_model_name)."""

    def __call__(self, parser, namespace, values, option_string=None):
        out = []
        for item in values or []:
            if item in (None, ""):
                continue
            if "=" in item and "," not in item:
                try:
                    name, path = item.split("=")
                except ValueError as e:
                    raise Refused(str(e), option_string or "") from e
                out.append({"name": name, "path": path, "base_model_name": None})
                continue
            try:
                obj = json.loads(item)
            except json.JSONDecodeError:
                parser.error(f"Invalid JSON format for --lora-modules: {item}")
            if not isinstance(obj, dict) or not {"name", "path"} <= set(obj) or \
                    not set(obj) <= {"name", "path", "base_model_name"}:
                parser.error(f"Invalid fields for --lora-modules: {item} - needs name and path, may have "
                             "base_model_name")
            out.append(obj)
        setattr(namespace, self.dest, out)


class _VllmPromptAdapter(argparse.Action):
    """vllm==0.9.2 entrypoints/openai/cli_args.py:64-82 (``PromptAdapterParserAction``): ``name=path`` each."""

    def __call__(self, parser, namespace, values, option_string=None):
        out = []
        for item in values or []:
            try:
                name, path = item.split("=")
            except ValueError as e:
                raise Refused(str(e), option_string or "") from e
            out.append({"name": name, "path": path})
        setattr(namespace, self.dest, out)


_ACTIONS = {"_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
            "_StoreConstAction": "store_const", "_AppendAction": "append", "_AppendConstAction": "append_const",
            "_CountAction": "count", "BooleanOptionalAction": argparse.BooleanOptionalAction, "help": _Help,
            "DeprecatedAction": _SgLangDeprecated, "LoRAParserAction": _VllmLoRA,
            "PromptAdapterParserAction": _VllmPromptAdapter, "LoRAPathAction": _StoreList}
OPAQUE_ACTIONS = ("LoRAParserAction", "PromptAdapterParserAction")
"""Actions whose values are the server's own objects: accepted or refused as the server does, the value kept as
the fields given (not compared with the server's objects)."""


def _flag_of(message: str) -> str:
    m = re.match(r"argument ([^:]+):", message)
    if m:
        return m.group(1).split("/")[0]
    for pattern in (r"unrecognized arguments: (\S+)", r"ambiguous option: (\S+?)(?:=\S*)? could match",
                    r"the following arguments are required: (\S+)"):
        m = re.search(pattern, message)
        if m:
            return m.group(1).rstrip(",").split("=", 1)[0]
    return ""


@functools.lru_cache(maxsize=None)
def _parser(server: str, version: str, entrypoint: str) -> tuple[argparse.ArgumentParser, dict]:
    table = flag_table(server, version)
    entry = table["entrypoints"][entrypoint]
    parser = _Parser(prog=ENTRYPOINTS[server][entrypoint], allow_abbrev=entry["allow_abbrev"],
                     prefix_chars=entry["prefix_chars"], add_help=False)
    defaults = {}
    for o in entry["options"]:
        action = _ACTIONS.get(o["action"], "store")
        kw: dict[str, Any] = {"dest": o["dest"]}
        names = list(o["option_strings"])
        if action is argparse.BooleanOptionalAction:
            names = [n for n in names if not (n.startswith("--no-") and "--" + n[5:] in names)]
        if action is _Help:
            parser.add_argument(*names, action=_recorder(_Help))
            continue
        if not names:  # a positional
            kw.pop("dest")
            names = [o["dest"]]
        if action in ("store", "append", _StoreList, _VllmLoRA, _VllmPromptAdapter):
            kw["nargs"] = o["nargs"]
            if o.get("choices") is not None:
                kw["choices"] = o["choices"]
            reader = type_reader(o)
            if reader is not None:
                kw["type"] = reader
            if o["const"] is not None:
                kw["const"] = o["const"]
        if action in ("store_const", "append_const"):
            kw["const"] = o["const"]
        if action is _SgLangDeprecated:
            kw["message"] = o.get("message", "")
            kw["nargs"] = o["nargs"]
        if o["default"] != "==SUPPRESS==":
            kw["default"] = o["default"]
            defaults[o["dest"]] = o["default"]
        else:
            kw["default"] = argparse.SUPPRESS
        if o.get("required"):
            kw["required"] = True
        parser.add_argument(*names, action=_recorder(parser._registry_get("action", action, action)), **kw)
    return parser, defaults


@dataclass
class Reading:
    server: str
    version: str
    entrypoint: str
    accepted: bool
    error: str = ""
    """The server's message, as its parser (or its entry point) stops with it."""
    flag: str = ""
    """The flag the error names, when it names one."""
    values: dict = field(default_factory=dict)
    """Every option's value (dest -> value), the defaults included, when accepted."""
    given: set = field(default_factory=set)
    """The dests the line sets."""
    config_file: bool = False
    """The line names a ``--config`` file: settings it leaves out may come from the file."""

    @property
    def title(self) -> str:
        return f"{TITLES.get(self.server, self.server)} {self.version}"


def refusal(reading: Reading) -> str:
    """The error for a line the server's parser refuses: the flag, the server and its version, the parser's own
    words, and what is allowed."""
    server, entrypoint = reading.server, reading.entrypoint
    flag = reading.flag or "the command line"
    hint = ""
    if "unrecognized arguments" in reading.error and reading.flag.startswith("-"):
        close = close_spellings(server, reading.version, entrypoint, reading.flag)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        allowed = f"a flag {reading.title} declares{hint}; catalogs/server_flags/{server}-{reading.version}.json " \
                  "lists them"
    elif "unrecognized arguments" in reading.error:
        allowed = ("the model as `vllm serve MODEL` (command [vllm, serve, MODEL]) or `--model MODEL` under the "
                   "image's entry point" if server == "vllm" else "flags only; the model goes in --model-path")
    elif "ignored explicit argument" in reading.error:
        allowed = f"{reading.flag} alone (it is a switch and takes no value)"
    elif "ambiguous option" in reading.error:
        allowed = "the full spelling of one of the flags it could match"
    elif "With `vllm serve`" in reading.error:
        allowed = "`vllm serve MODEL` (the model as the word after serve), without --model"
    else:
        allowed = f"what {reading.title}'s parser accepts for {flag}"
    program = {**ENTRYPOINTS, **NATIVE_ENTRYPOINTS}[server][entrypoint]
    return f"{flag}: {reading.title} ({program}) exits on this line: " \
           f"{reading.error}; allowed: {allowed}"



def _vllm_preprocess(argv: list[str], entrypoint: str) -> list[str]:
    """vllm==0.9.2 utils/__init__.py:1465-1560 (``FlexibleArgumentParser.parse_args``): under ``vllm serve`` a
    ``--model`` is an error; ``--a_b`` is read as ``--a-b`` (up to the first ``.``); ``-O3`` is ``-O.level=3``;
    dotted ``--x.y v`` flags become one JSON ``--x`` value, appended at the end."""
    if entrypoint == "serve" and any(arg == "--model" for arg in argv):
        raise Refused("With `vllm serve`, you should provide the model as a positional argument or in a config file "
                      "instead of via the `--model` option.", "--model")
    if "--config" in argv:  # utils/__init__.py:1608-1650 (_pull_args_from_config)
        if argv.count("--config") > 1:
            raise Refused("More than one config file specified!", "--config")
        at = argv.index("--config")
        if at == len(argv) - 1:
            raise Refused("No config file specified! " + " " * 29 + "Please check your command-line arguments.",
                          "--config")
        # the file's settings go in before the line's: not known here (Reading.config_file says so)
        argv = argv[:at] + argv[at + 2:]
    dash = re.compile(r"(?<=--)[^\.]*")
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                out.append(dash.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + "=" + value)
            else:
                out.append(dash.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
        elif arg.startswith("-O") and arg != "-O" and arg[2] != ".":
            level = arg[3:] if arg[2] == "=" else arg[2:]
            out.append(f"-O.level={level}")
        elif arg == "-O" and i + 1 < len(argv) and argv[i + 1] in {"0", "1", "2", "3"}:
            out.append("-O.level")
        else:
            out.append(arg)
    delete: set[int] = set()
    dicts: dict[str, dict] = {}
    for i, arg in enumerate(out):
        if i in delete or not (arg.startswith("-") and "." in arg):
            continue
        if "=" in arg:
            arg, value_text = arg.split("=", 1)
            if "." not in arg:
                continue
        else:
            if i + 1 >= len(out):
                raise Refused(f"{arg}: expected a value (IndexError in vLLM's parse_args)", arg)
            value_text = out[i + 1]
            delete.add(i + 1)
        if arg.endswith("+"):
            arg = arg[:-1]
            value_text = json.dumps(list(value_text.split(",")))
        key, *keys = arg.split(".")
        try:
            value: Any = json.loads(value_text)
        except json.JSONDecodeError:
            value = value_text
        for k in reversed(keys):
            value = {k: value}
        _merge(dicts.setdefault(key, {}), value)
        delete.add(i)
    out = [a for i, a in enumerate(out) if i not in delete]
    for key, value in dicts.items():
        out += [key, json.dumps(value)]
    return out


def _merge(original: dict, update: dict) -> None:
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def _vllm_validate(ns: argparse.Namespace) -> None:
    """vllm==0.9.2 entrypoints/openai/cli_args.py:302-316 (``validate_parsed_serve_args``), but the chat template's
    path, which only the image's file system can answer."""
    if ns.enable_auto_tool_choice and not ns.tool_call_parser:
        raise Refused("Error: --enable-auto-tool-choice requires --tool-call-parser", "--enable-auto-tool-choice")
    if ns.enable_prompt_embeds and ns.enable_prompt_adapter:
        raise Refused("Cannot use prompt embeds and prompt adapter at the same time.", "--enable-prompt-embeds")


_GIVEN = "\x00given"

def read(server: str, version: str, entrypoint: str, argv: list[str]) -> Reading:
    """``argv`` (the words after the entry point's command) as ``server==version`` reads it."""
    reading = Reading(server, version, entrypoint, accepted=False)
    parser, defaults = _parser(server, version, entrypoint)
    words = list(argv)
    reading.config_file = "--config" in words
    try:
        if server == "vllm":
            words = _vllm_preprocess(words, entrypoint)
        given: set[str] = set()
        ns = argparse.Namespace(**defaults)
        ns.__dict__[_GIVEN] = given
        ns = parser.parse_args(words, ns)
        ns.__dict__.pop(_GIVEN, None)
        if server == "vllm":
            _vllm_validate(ns)
    except Refused as e:
        reading.error, reading.flag = e.message, e.flag
        return reading
    reading.accepted = True
    reading.values = vars(ns)
    reading.given = given
    return reading


@functools.lru_cache(maxsize=None)
def _recorder(cls: type) -> type:
    def __call__(self, parser, namespace, values, option_string=None):
        namespace.__dict__[_GIVEN].add(self.dest)
        return cls.__call__(self, parser, namespace, values, option_string)
    return type(f"Recorded{cls.__name__}", (cls,), {"__call__": __call__})


def options(server: str, version: str, entrypoint: str) -> list[dict]:
    table = flag_table(server, version)
    return table["entrypoints"][entrypoint]["options"] if table else []


def resolve(server: str, version: str, entrypoint: str, word: str) -> str:
    """The dest a word (``--tp``, ``--max_num_seqs=8``) sets, as the parser resolves it (exact spelling, vLLM's
    underscores, then a unique prefix of a long option); "" when it names none or more than one."""
    name = word.split("=", 1)[0]
    if server == "vllm" and name.startswith("--"):
        name = "--" + name[2:].split(".", 1)[0].replace("_", "-")
    spelled = spellings(server, version, entrypoint)
    if name in spelled:
        return spelled[name]
    if not name.startswith("--"):
        return ""
    hits = {d for s, d in spelled.items() if s.startswith(name) and s.startswith("--")}
    return hits.pop() if len(hits) == 1 else ""


def close_spellings(server: str, version: str, entrypoint: str, word: str) -> list[str]:
    name = word.split("=", 1)[0]
    longs = [s for s in spellings(server, version, entrypoint) if s.startswith("--")]
    return difflib.get_close_matches(name.replace("_", "-"), longs, n=2, cutoff=0.75)


PARALLEL_DESTS = ("tensor_parallel_size", "pipeline_parallel_size")


def gpus_spanned(server: str, values: dict) -> int:
    """GPUs one replica's server spans, from its reading: vLLM tensor x pipeline x (local, else global) data
    parallel (vllm==0.9.2 config.py ParallelConfig.world_size, times the data-parallel engines a node runs); SGLang
    tensor x pipeline x data parallel (sglang==0.5.4 srt/server_args.py: --dp-size engines of --tp-size GPUs)."""
    n = 1
    for dest in PARALLEL_DESTS:
        n *= values.get(dest) or 1
    if server == "vllm":
        return n * (values.get("data_parallel_size_local") or values.get("data_parallel_size") or 1)
    return n * (values.get("data_parallel_size") or 1)


def spellings(server: str, version: str, entrypoint: str) -> dict[str, str]:
    """Every option string -> its dest."""
    return {s: o["dest"] for o in options(server, version, entrypoint) for s in o["option_strings"]}


# --- the servers whose parsers are not Python: TGI (clap) and Triton (getopt_long) ------------------------------

NATIVE_ENTRYPOINTS = {name: dict(p.entrypoints) for name, p in PROFILES.items() if p.native_parser}
TRITON_CONTAINERS: dict[tuple, str] = {(24, 8): "2.49.0"}
"""NGC container release -> the Triton release it ships (NVIDIA Triton Inference Server release notes, 24.08:
"Triton Inference Server 2.49.0"): the image tag names the container."""

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.I)
TRITON_BOOLS = {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False}
"""triton-inference-server/server v2.49.0 src/command_line_parser.cc:175-193 (``ParseOption<bool>``, any case)."""


def native_version(server: str, version: Optional[tuple]) -> Optional[str]:
    """The table version of an image's version: TGI's tag is its release; Triton's NGC tag is the container's."""
    if version is None:
        return None
    if server == "triton":
        return TRITON_CONTAINERS.get(tuple(version[:2]))
    return version_text(version)


def _native_value(server: str, o: dict, name: str, text: str):
    kind = o["kind"]
    if UNKNOWN in text:
        return UNKNOWN_VALUE
    if kind == "bool":
        if server == "triton":
            if text.lower() in TRITON_BOOLS:
                return TRITON_BOOLS[text.lower()]
            raise Refused(f"invalid value for bool option: {text}; allowed: true, on, 1, false, off, 0", name)
        if text in ("true", "false"):  # clap value_parser!(bool)
            return text == "true"
        raise Refused(f"invalid value '{text}' for '{name} <{o['dest'].upper()}>': allowed: true, false", name)
    if kind == "int":
        if not _INT.fullmatch(text) or (o.get("unsigned") and text.startswith("-")):
            raise Refused(f"invalid value '{text}' for '{name}': "
                          f"{'an unsigned ' if o.get('unsigned') else 'an '}integer expected", name)
        value = int(text)
        if o.get("bits") and o.get("unsigned") and value >= 2 ** o["bits"]:
            raise Refused(f"invalid value '{text}' for '{name}': number too large to fit in target type", name)
        return value
    if kind == "float":
        if not _FLOAT.fullmatch(text):
            raise Refused(f"invalid value '{text}' for '{name}': a number expected", name)
        return float(text)
    if kind == "choice":
        if text not in o["choices"]:
            raise Refused(f"invalid value '{text}' for '{name}'; allowed: {', '.join(o['choices'])}", name)
    return text


def read_native(server: str, version: str, argv: list[str]) -> Reading:
    """``argv`` as TGI's launcher (clap: exact long names, ``--name value`` or ``--name=value``, a ``bool`` field a
    switch that takes no value) or ``tritonserver`` (getopt_long: a unique prefix of a long name also works, every
    option but ``--help`` takes a value, ``--name=value`` on a switch is refused) reads it."""
    table = flag_table(server, version)
    (entry, spec), = table["entrypoints"].items()
    reading = Reading(server, version, entry, accepted=False)
    opts = spec["options"]
    by_name = {s: o for o in opts for s in o["option_strings"]}
    ambiguous_shorts = set(spec.get("ambiguous_shorts", ()))
    values: dict = {o["dest"]: None for o in opts}
    given: set = set()
    i = 0
    try:
        while i < len(argv):
            word = argv[i]
            i += 1
            if not word.startswith("-") or word == "-":
                raise Refused(f"unexpected argument '{word}' found", word)
            if word == "--":
                if i < len(argv):
                    raise Refused(f"unexpected argument '{argv[i]}' found", argv[i])
                break
            name, eq, inline = word.partition("=")
            o = by_name.get(name)
            if o is None and server == "triton" and name.startswith("--"):
                hits = [s for s in by_name if s.startswith(name)]
                if len(hits) > 1:
                    raise Refused(f"option '{name}' is ambiguous; possibilities: {' '.join(hits)}", name)
                o = by_name.get(hits[0]) if hits else None
            if name in ambiguous_shorts:
                raise Refused(f"{name} is declared by more than one flag ("
                              f"{', '.join(x['option_strings'][0] for x in opts if name in x['option_strings'])}), "
                              "so which one it sets is not defined", name)
            if o is None:
                said = f"unrecognized option '{name}'" if server == "triton" else f"unexpected argument '{name}' found"
                raise Refused(said, name)
            shown = o["option_strings"][0]
            if o["kind"] == "switch":
                if eq:
                    raise Refused(f"option '{shown}' doesn't allow an argument" if server == "triton" else
                                  f"unexpected value '{inline}' for '{shown}' found; no more were expected", shown)
                if o["dest"] == "help":
                    raise Refused(f"{shown}: prints its help and exits, serving nothing", shown)
                values[o["dest"]] = True
                given.add(o["dest"])
                continue
            if eq:
                text = inline
            elif i < len(argv) and (server == "triton" or not argv[i].startswith("-")):
                text = argv[i]
                i += 1
            else:
                raise Refused(f"option '{shown}' requires an argument" if server == "triton" else
                              f"a value is required for '{shown}' but none was supplied", shown)
            if o.get("repeated"):
                parts = text.split(o["delimiter"]) if o.get("delimiter") else [text]
                values[o["dest"]] = (values[o["dest"]] or []) + [_native_value(server, o, shown, p) for p in parts]
            else:
                values[o["dest"]] = _native_value(server, o, shown, text)
            given.add(o["dest"])
    except Refused as e:
        reading.error, reading.flag = e.message, e.flag
        return reading
    reading.accepted, reading.values, reading.given = True, values, given
    return reading


def table_version(server: str, version: Optional[tuple]) -> Optional[str]:
    """The version the tables would hold for an image's version (None when the tag names none)."""
    if server in NATIVE_ENTRYPOINTS:
        return native_version(server, version)
    return version_text(version) if version is not None else None


def command_entrypoint(server: str, words: list[str]) -> Optional[tuple[str, int]]:
    """:func:`entrypoint_of` for every server: TGI's ``text-generation-launcher``, Triton's ``tritonserver``."""
    if server in NATIVE_ENTRYPOINTS:
        i = 1 if words[:1] == ["exec"] else 0
        program = words[i].rsplit("/", 1)[-1] if len(words) > i else ""
        (entry, name), = NATIVE_ENTRYPOINTS[server].items()
        return (entry, i + 1) if program == name else None
    return entrypoint_of(server, words)


def read_any(server: str, version: str, entrypoint: str, argv: list[str]) -> Reading:
    return read_native(server, version, argv) if server in NATIVE_ENTRYPOINTS else read(server, version, entrypoint,
                                                                                          argv)
