"""A workload's inference server as its command line makes it run: ``command``, ``args`` and ``env`` read the way the
server reads them (catalogs/server_cli.py), into the facts the package checks the workload against.

For a server version the flag tables know (catalogs/server_flags/, generated from the server's own parser), the
line is read by that parser's grammar (catalogs/server_grammar.py): an unknown flag, a value on a switch, a bad
choice, a wrong type or an ambiguous prefix is an error naming the flag, the server and its version, as the
server exits on it; the facts come from that reading (``--tp 2`` is SGLang's ``--tp-size``). For a version the
tables do not know, ``ServerFacts.notes`` says so and the line is read by the catalog's flags alone: ``--name
value`` or ``--name=value``, the last one wins, a switch takes no value, and a flag the catalog does not model is
passed over.
Kubernetes expands ``$(VAR)`` in ``command`` and ``args`` from the container's environment (Kubernetes API,
Container ``args``: "Variable references $(VAR_NAME) are expanded using the container's environment"), so a
reference to a ``secretEnv`` variable is how a credential reaches a flag without sitting in the pod spec.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from gpuplatform.catalogs import server_cli as cli
from gpuplatform.catalogs import server_grammar as grammar
from gpuplatform.catalogs.metrics import image_version
from gpuplatform.catalogs.secrets import SECRET_ENV_PATTERN, credential_in
# split_command_line and its helpers live in command_line.py (config.py splits a line with them); named here too
from gpuplatform.components.command_line import (SHELL_OPERATORS, image_repository_matches,  # noqa: F401
                                                 split_command_line)
from gpuplatform.components.config import Workload

K8S_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
SHELL_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
SECRET_NAME = re.compile(SECRET_ENV_PATTERN)


@dataclass(frozen=True)
class Setting:
    value: Any
    where: str
    """What set it, for messages: ``args '--port=8000'``, ``env PORT``, ``the default``, ``the image's PORT``."""
    path: str = ""
    """The stack path of the key that set it (``args``, ``env.PORT``); empty for a default."""


@dataclass
class ServerFacts:
    server: str
    settings: dict = field(default_factory=dict)
    """Fact -> :class:`Setting`, from the flags and environment variables given, else the server's defaults."""
    problems: list = field(default_factory=list)
    """(stack path, message) of what the command line itself gets wrong (a value that is no number, an ambiguous
    flag)."""
    secrets: list = field(default_factory=list)
    """(stack path, flag) of credentials given to a flag that takes one, in plain text."""
    credentials: list = field(default_factory=list)
    """(stack path, what) of credentials found anywhere else in the command line (catalogs/secrets.py
    ``credential_in``: a URL with a password, a known token format)."""
    official_image: bool = False
    """The image is the server's official one, whose environment (``image_env``) is known."""
    shell: bool = False
    """The command line is a shell script (``sh -c``), read as its words."""
    config_file: bool = False
    """The server reads further settings from a file: defaults the line does not override are not known."""
    reading: Optional[grammar.Reading] = None
    """The line as the server's own parser reads it, when the flag tables know the image's version."""
    notes: list = field(default_factory=list)
    """(stack path, message) of what is not judged and why (a server version the flag tables do not know)."""

    def get(self, fact: str, default: Any = None) -> Any:
        s = self.settings.get(fact)
        return s.value if s is not None else default

    def setting(self, fact: str) -> Optional[Setting]:
        return self.settings.get(fact)

    @property
    def gpus(self) -> Optional[int]:
        """GPUs one replica's server spans: vLLM tp x pp x pcp x (local) dp (config/parallel.py world size x DP),
        SGLang dp x tp x pp; TGI its shards, None when ``--num-shard`` is not set (the launcher then starts one per
        visible device: launcher/src/main.rs ``num_cuda_devices``); None for Triton (its instances are per model
        config, not modelled)."""
        if self.server == "triton":
            return None
        if self.server == "tgi":
            return self.get(cli.NUM_SHARD)
        return (self.get(cli.TP, 1) or 1) * (self.get(cli.PP, 1) or 1) * (self.get(cli.PCP, 1) or 1) * \
            self.data_parallel

    @property
    def data_parallel(self) -> int:
        """Engines a replica runs side by side, each with its own batch (vLLM's local data-parallel size, SGLang's
        ``--dp-size``); 1 otherwise."""
        if self.server in ("vllm", "sglang"):
            return self.get(cli.DP_LOCAL) or self.get(cli.DP, 1) or 1
        return 1

    @property
    def model_shards(self) -> Optional[int]:
        """GPUs one copy of the weights is split over: tensor x pipeline parallel (data parallel replicates them;
        TGI's shards are tensor parallel, None when they follow the visible devices)."""
        if self.server == "tgi":
            return self.get(cli.NUM_SHARD)
        if self.server == "triton":
            return None
        return (self.get(cli.TP, 1) or 1) * (self.get(cli.PP, 1) or 1)


def _convert(flag: cli.Flag, text: str) -> Any:
    if flag.value == "int":
        return int(text)
    if flag.value == "float":
        return float(text)
    if flag.value in ("bool", "switch"):
        low = text.strip().lower()
        if low in ("true", "on", "1", "yes"):
            return True
        if low in ("false", "off", "0", "no"):
            return False
        raise ValueError(text)
    return text


def _expand(text: str, env: dict) -> tuple[str, bool]:
    """Kubernetes' ``$(VAR)`` expansion from the workload's plain env (anywhere in the string; ``$$`` escapes a
    ``$``). Returns the text and whether a reference was left that the plain env cannot expand (a ``secretEnv``
    variable, or one the image sets): its value is not known here."""
    unknown = False

    def sub(m: re.Match) -> str:
        nonlocal unknown
        if m.group(0) == "$$":
            return "$"
        if m.group(1) in env:
            return env[m.group(1)]
        unknown = True
        return m.group(0)

    return K8S_REF.sub(sub, text), unknown


def _written_out(raw: str, env: dict, shell: bool) -> bool:
    """Whether the credential in ``raw`` is written in the pod spec: it is, unless it comes from a variable that is
    not in the plain ``env`` (a ``secretEnv`` one, or one the image sets): ``$(NAME)`` (Kubernetes) or, inside a
    shell script, ``$NAME``/``${NAME}``."""
    names = {n for n in K8S_REF.findall(raw) if n}
    if shell:
        names |= {a or b for a, b in SHELL_REF.findall(raw)}
    return not names or all(n in env for n in names)


def _tokens(w: Workload) -> tuple[list[tuple[str, str]], bool]:
    """(key, token) of the command line, and whether it is a shell script: ``sh -c '<script>'`` is read as the
    words of its script (shlex), which is how the server receives them."""
    words = [("command", t) for t in w.command] + [("args", t) for t in w.args]
    shells = ("sh", "bash", "dash", "ash", "zsh")
    first = words[0][1].rsplit("/", 1)[-1] if words else ""
    if first in shells:
        for i, (key, token) in enumerate(words):
            if token == "-c" and i + 1 < len(words):
                key, script = words[i + 1]
                try:
                    return [(key, t) for t in shlex.split(script, comments=True)], True
                except ValueError:
                    return [], True
    return words, False


def parse(w: Workload) -> Optional[ServerFacts]:
    """The facts of the workload's server (None for a workload that names no server)."""
    spec = cli.SERVER_CLIS.get(w.server or "")
    if spec is None:
        return None
    facts = ServerFacts(spec.name)
    official = any(image_repository_matches(w.image, repo) for repo in spec.official_images)
    facts.official_image = official
    for fact, value in spec.defaults.items():
        facts.settings[fact] = Setting(value, "the default")
    for name, value in spec.image_env.items():
        flag = spec.env_flag(name)
        if flag is None:
            continue
        if official:
            facts.settings[flag.fact] = Setting(_convert(flag, value), f"the image's {name}")
        else:
            # an image built on the official one may keep its ENV, or not: the fact is not known
            facts.settings.pop(flag.fact, None)
    env = effective_env(w)
    for name, value in sorted(env.items()):
        flag = spec.env_flag(name)
        if flag is None or flag.secret:
            continue  # a literal secret in env is refused by the env rule already
        where = f"env.{name}"
        try:
            facts.settings[flag.fact] = Setting(_convert(flag, value), f"env {name}", where)
        except ValueError:
            facts.problems.append((where, f"{value!r} is not a valid {name} ({flag.value} expected)"))
    for name in w.secret_env:
        flag = spec.env_flag(name)
        if flag is not None and flag.secret:
            facts.settings[flag.fact] = Setting("(a Secret)", f"secretEnv {name}", f"secretEnv.{name}")
    tokens, shell = _tokens(w)
    facts.shell = shell
    joined = [] if shell else [(key, token, split_needed(token)) for key, token in tokens]
    for key, token, split in joined:
        if split:
            facts.problems.append((key, f"{token!r} is one word to the server (each item is one argument); "
                                        f"allowed: two items {split[0]!r}, {split[1]!r}, or "
                                        f"'{split[0]}={split[1]}'"))
    i = 0
    while i < len(tokens):
        key, token = tokens[i]
        i += 1
        if not token.startswith("-") or token in ("-", "--"):
            _check_credential(facts, key, token)
            continue
        name, eq, inline = token.partition("=")
        if name in spec.config_files:
            # the file may set what the line leaves out: the defaults are no longer known to apply
            facts.config_file = True
            for fact in [f for f, s in facts.settings.items() if not s.path]:
                facts.settings.pop(fact)
        if name in spec.ambiguous:
            facts.problems.append((key, f"{token!r}: {spec.name} declares {name} for more than one flag, so which "
                                        "one it sets is not defined; allowed: the long form"))
            continue
        flag = spec.flag(name)
        takes_value = eq or (i < len(tokens) and not tokens[i][1].startswith("-"))
        if flag is None:
            # not modelled: no opinion on it, but a credential written as its value is still one
            if takes_value:
                raw = inline if eq else tokens[i][1]
                if not eq:
                    i += 1
                secret_name = SECRET_NAME.search(name.lstrip("-").replace("-", "_").upper())
                if secret_name and _written_out(raw, env, shell):
                    facts.secrets.append((key, name))
                else:
                    _check_credential(facts, key, raw)
            continue
        if flag.value == "switch" and not eq:
            facts.settings[flag.fact] = Setting(True, f"{key} {token!r}", key)
            continue
        if eq:
            raw = inline
        elif i < len(tokens) and not tokens[i][1].startswith("--"):
            raw = tokens[i][1]
            i += 1
        else:
            facts.problems.append((key, f"{token!r} takes a value and none follows"))
            continue
        shown = f"{token}={raw}" if not eq else token
        if flag.secret:
            if flag.fact == cli.RESTRICTED:
                # <apis>:<header>=<value>: the API list is no secret, the header value is (repeatable)
                apis = raw.split(":", 1)[0]
                earlier = facts.get(cli.RESTRICTED) or frozenset()
                facts.settings[flag.fact] = Setting(earlier | {a.strip() for a in apis.split(",")},
                                                    f"{key} {name}={apis}:...", key)
            else:
                facts.settings[flag.fact] = Setting("(a Secret)", f"{key} {name}", key)
            if _written_out(raw, env, shell):
                facts.secrets.append((key, name))
            continue
        _check_credential(facts, key, raw)
        text, unknown = _expand(raw, env)
        if unknown or (shell and SHELL_REF.search(text)):
            facts.settings.pop(flag.fact, None)  # set from a variable whose value is not known here
            continue
        try:
            facts.settings[flag.fact] = Setting(_convert(flag, text), f"{key} {shown!r}", key)
        except ValueError:
            wanted = "a number" if flag.value in ("int", "float") else "true or false"
            facts.problems.append((key, f"{shown!r}: {raw!r} is not {wanted}"))
    _read_with_grammar(w, spec, facts, tokens, shell, env)
    return facts


def _read_with_grammar(w: Workload, spec: cli.ServerCli, facts: ServerFacts, tokens: list, shell: bool,
                       env: dict) -> None:
    """The line read by the server's own grammar, when the tables know the image's version: its problems replace
    the catalog reading's, and the facts it sets (every spelling and prefix the parser takes) override it."""
    if spec.name not in grammar.ENTRYPOINTS and spec.name not in grammar.NATIVE_ENTRYPOINTS:
        return
    version = image_version(w.image)
    title = grammar.TITLES[spec.name]
    known = grammar.known_versions(spec.name)
    vtext = grammar.table_version(spec.name, version)
    if vtext is None or grammar.flag_table(spec.name, vtext) is None:
        said = (f"{title} image {w.image!r}" if spec.name == "triton" else f"{title} {grammar.version_text(version)}") \
            if version else f"{title} image {w.image!r} (no version tag)"
        facts.notes.append(("image", f"{said}: the flag tables know {', '.join(known)}; the command line is not "
                                     "read by this version's parser (only the flags the catalog models are read)"))
        return
    words = [t for _, t in tokens]
    n_command = 0 if shell else len(w.command)
    if n_command == 0 and not shell:
        entry = grammar.IMAGE_ENTRYPOINTS.get(spec.name) if facts.official_image else None
        if entry is None:
            facts.notes.append(("command", f"{title} {vtext}: no command, and the image's entry point is not known; "
                                           "the line is not read by its parser"))
            return
        start = 0
    else:
        found = grammar.command_entrypoint(spec.name, words)
        if found is None:
            programs = {**grammar.ENTRYPOINTS, **grammar.NATIVE_ENTRYPOINTS}[spec.name].values()
            facts.notes.append(("command", f"{title} {vtext}: the command starts none of its entry points "
                                           f"({', '.join(programs)}); the line is not read by its parser"))
            return
        entry, start = found
    argv_keys = tokens[start:]
    argv = []
    for _, token in argv_keys:
        text, unknown = _expand(token, env)
        if unknown or (shell and SHELL_REF.search(text)):
            text = K8S_REF.sub(lambda m: grammar.UNKNOWN if m.group(1) else "$", text)
            text = SHELL_REF.sub(grammar.UNKNOWN, text) if shell else text
        argv.append(text)
    reading = grammar.read_any(spec.name, vtext, entry, argv)
    facts.reading = reading
    split = [p for p in facts.problems if "is one word to the server" in p[1]]
    facts.problems = [p for p in facts.problems if p[0].startswith("env.")] + split
    if not reading.accepted:
        if split:
            return  # the split is the fix
        facts.problems.append((_key_of(argv_keys, reading.flag), grammar.refusal(reading)))
        return
    for flag in spec.flags:
        if not flag.names:
            continue
        dest = grammar.spellings(spec.name, vtext, entry).get(flag.names[0])
        if dest is None:  # not a flag of this version (vLLM's --uds before 0.10.1): the line cannot have set it
            if facts.settings.get(flag.fact) is not None and facts.settings[flag.fact].path in ("args", "command"):
                facts.settings.pop(flag.fact)
            continue
        if dest not in reading.given or flag.secret:
            continue
        value = reading.values.get(dest)
        if value is grammar.UNKNOWN_VALUE:
            facts.settings.pop(flag.fact, None)
            continue
        key, token = _last_token(spec.name, vtext, entry, argv_keys, dest)
        facts.settings[flag.fact] = Setting(value, f"{key} {token!r}", key)


def _key_of(argv_keys: list, flag: str) -> str:
    """The stack key (``args``, ``command``) of the word that names ``flag``."""
    for key, token in argv_keys:
        if flag and token.split("=", 1)[0] == flag:
            return key
    return argv_keys[-1][0] if argv_keys else "args"


def _last_token(server: str, version: str, entry: str, argv_keys: list, dest: str) -> tuple[str, str]:
    """(key, words) of the last flag on the line that sets ``dest``, with its value for messages."""
    found = ("args", dest)
    for i, (key, token) in enumerate(argv_keys):
        if token.startswith("-") and grammar.resolve(server, version, entry, token) == dest:
            shown = token if "=" in token or i + 1 >= len(argv_keys) or argv_keys[i + 1][1].startswith("-") \
                else f"{token}={argv_keys[i + 1][1]}"
            found = (key, shown)
    return found


def split_needed(token: str) -> Optional[tuple[str, str]]:
    """(flag, value) of an args item holding both, separated by a space (``--tensor-parallel-size 2``): the server
    receives it as one word."""
    if not token.startswith("-") or " " not in token.split("=", 1)[0]:
        return None
    flag, _, value = token.partition(" ")
    return (flag, value.strip()) if flag.lstrip("-") else None


def _check_credential(facts: "ServerFacts", key: str, text: str) -> None:
    """A credential anywhere on the line: a URL carrying one (``https://user:token@host/...``, ``?token=``) or a
    token of a known format (``hf_...``)."""
    what = credential_in(text)
    if what:
        facts.credentials.append((key, what))


DEFAULT_HOME = "/tmp"
"""``HOME`` of a server container with a read-only root filesystem that sets none: the servers write their caches
under ``~`` (catalogs/server_cli.py ``caches``), and a UID the image's /etc/passwd does not list gets ``HOME=/``
from the runtime (runc: the user's home, else ``/``), which is read-only here. ``/tmp`` is the writable emptyDir
every workload has."""


def effective_env(w: Workload) -> dict[str, str]:
    """The workload's plain environment as the container gets it: ``env``, plus ``HOME=/tmp`` for a server with a
    read-only root filesystem that sets no ``HOME``."""
    env = dict(w.env)
    if (w.server and w.read_only_root_filesystem and "HOME" not in env and "HOME" not in w.secret_env):
        env["HOME"] = DEFAULT_HOME
    return env


def resolve_dir(cache: cli.CacheDir, env: dict[str, str], image_env: Optional[dict] = None) -> tuple[str, str]:
    """(directory, what chose it) of a server's cache: the first of its environment variables set (the
    workload's ``env``, else the image's), else its default with ``~`` as ``$HOME`` and ``$XDG_CACHE_HOME``/
    ``$XDG_CONFIG_HOME`` as their XDG defaults."""
    image_env = image_env or {}
    merged = {**image_env, **env}
    for name in cache.envs:
        if merged.get(name):
            path = merged[name].rstrip("/") or "/"
            if name in cache.below:
                path = f"{path.rstrip('/')}/{cache.below[name]}"
            return path, (f"env {name}" if name in env else f"the image's {name}")
    home = merged.get("HOME", "/")
    path = cache.default
    path = path.replace("$XDG_CACHE_HOME", merged.get("XDG_CACHE_HOME") or "~/.cache")
    path = path.replace("$XDG_CONFIG_HOME", merged.get("XDG_CONFIG_HOME") or "~/.config")
    if path.startswith("~"):
        path = home.rstrip("/") + path[1:]
    return path, f"the default {cache.default} with HOME={home}"
