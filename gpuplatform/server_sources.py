"""Flag tables of the servers whose parsers are not Python, read from their source at a release tag: TGI's clap
``Args`` (launcher/src/main.rs) and Triton's getopt_long option table (src/command_line_parser.cc). The tables go
to ``catalogs/server_flags/`` beside the ones ``gpuplatform.server_parsers`` dumps from the Python servers.

    python -m gpuplatform.server_sources --tgi-git DIR --triton-git DIR   # git directories of the two repositories

The source is read with ``git show TAG:PATH`` from a clone of each repository (nothing is copied into this one:
only the table, with the tag, the commit and the file it was read from).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

from gpuplatform.catalogs.server_profiles import PROFILES
from gpuplatform.server_parsers import TABLES, write_table

PINNED = {name: (p.flag_tables.tag_prefix + p.flag_tables.releases[-1], p.flag_tables.parser_path,
                 p.flag_tables.repository) for name, p in PROFILES.items() if p.native_parser}
"""(tag, parser file, repository) of each server whose table is read from source (its profile's ``flag_tables``)."""


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _variant_value(variant: str) -> str:
    """clap's ``ValueEnum`` name of an enum variant: kebab-case of its CamelCase name."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", variant).lower()


def _enums(text: str) -> dict[str, list[str]]:
    """Every ``#[derive(... ValueEnum ...)] enum Name { ... }``: its values as clap reads them (``#[clap(name =
    "...")]`` on a variant, else its kebab-case)."""
    out = {}
    for m in re.finditer(r"#\[derive\([^)]*ValueEnum[^)]*\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?enum\s+(\w+)\s*\{",
                         text):
        body, depth, i = [], 1, m.end()
        while depth:
            c = text[i]
            depth += {"{": 1, "}": -1}.get(c, 0)
            body.append(c)
            i += 1
        values, rename = [], None
        for line in "".join(body[:-1]).splitlines():
            line = line.strip()
            if line.startswith("///") or not line:
                continue
            named = re.match(r'#\[(?:clap|value)\(name\s*=\s*"([^"]+)"\)\]', line)
            if named:
                rename = named.group(1)
                continue
            if line.startswith("#["):
                continue
            v = re.match(r"(\w+)\s*[,({]?", line)
            if v:
                values.append(rename or _variant_value(v.group(1)))
                rename = None
        out[m.group(1)] = values
    return out


def tgi_table(text: str, tag: str, commit: str) -> dict:
    """TGI's launcher flags from ``struct Args``: each field's ``#[clap(...)]``: ``long`` (``--kebab-name``),
    ``short`` (its first letter, or the one named), ``env`` (the name in capitals, or the one named),
    ``default_value``, ``value_enum`` choices, ``value_delimiter``; the Rust type gives the value: ``bool`` a switch,
    ``Option<bool>`` true/false, integers, floats, text, ``Vec`` repeatable."""
    enums = _enums(text)
    start = text.index("struct Args {")
    body = text[start:text.index("\n}\n", start)]
    options, attrs = [], []
    for raw in body.splitlines()[1:]:
        line = raw.strip()
        if line.startswith("#[clap(") or line.startswith("#[arg("):
            attrs.append(line)
            continue
        if attrs and not line.endswith(")]") and attrs[-1].count("(") > attrs[-1].count(")"):
            attrs[-1] += " " + line
            continue
        field = re.match(r"(?:pub\s+)?(\w+):\s*(.+?),\s*$", line)
        if not field:
            continue
        name, rust_type = field.groups()
        spec = " ".join(attrs)
        attrs = []
        if "long" not in spec and "short" not in spec:
            continue  # a positional or a field clap does not read
        inner = rust_type
        optional = inner.startswith("Option<")
        inner = inner[len("Option<"):-1] if optional else inner
        repeated = inner.startswith("Vec<")
        inner = inner[len("Vec<"):-1] if repeated else inner
        names = ["--" + _kebab(name)] if re.search(r"\blong\b", spec) else []
        short = re.search(r"\bshort(?:\s*=\s*'(.)')?", spec)
        if short:
            names.append("-" + (short.group(1) or name[0]))
        env = re.search(r"\benv(?:\s*=\s*\"([^\"]+)\")?", spec)
        default = re.search(r'default_value\s*=\s*"([^"]*)"', spec)
        delimiter = re.search(r"value_delimiter\s*=\s*'(.)'", spec)
        kind = "switch" if inner == "bool" and not optional else (
            "bool" if inner == "bool" else "int" if re.fullmatch(r"[ui](8|16|32|64|size)", inner) else
            "float" if inner in ("f32", "f64") else "choice" if inner in enums else "str")
        options.append({
            "dest": name, "option_strings": names, "kind": kind, "rust_type": rust_type,
            "unsigned": bool(re.fullmatch(r"u(8|16|32|64|size)", inner)),
            "bits": int(re.sub(r"\D", "", inner) or 64) if kind == "int" else None,
            "choices": enums.get(inner), "repeated": repeated,
            "delimiter": delimiter.group(1) if delimiter else None,
            "env": (env.group(1) or name.upper()) if env else None,
            "default": default.group(1) if default else None,
        })
    shorts = [s for o in options for s in o["option_strings"] if not s.startswith("--")]
    return {"server": "tgi", "version": tag.lstrip("v"), "grammar": "clap",
            "provenance": {"source": f"{PINNED['tgi'][2]} {tag} ({commit}) {PINNED['tgi'][1]} struct Args",
                           "generator": "gpuplatform/server_sources.py"},
            "entrypoints": {"launcher": {"options": options,
                                         "ambiguous_shorts": sorted({s for s in shorts if shorts.count(s) > 1})}}}


def triton_table(text: str, tag: str, commit: str) -> dict:
    """Triton's options: each ``{OPTION_..., "name", Option::ArgKind, ...}`` of the option groups, given to
    getopt_long (``ArgNone``: no value; every other kind requires one)."""
    options, seen = [], set()
    for m in re.finditer(r'\{\s*(OPTION_\w+)\s*,\s*"([^"]+)"\s*,\s*(?:Option::Arg(\w+)|"[^"]*")', text):
        option_id, name, kind = m.groups()  # a quoted description (``"<string>:<string>=<string>"``): a text value
        if name in seen:
            continue
        seen.add(name)
        options.append({"dest": option_id.lower().removeprefix("option_"), "option_strings": ["--" + name],
                        "kind": {"None": "switch", "Bool": "bool", "Int": "int", "Float": "float"}.get(kind or "", "str"),
                        "option_id": option_id})
    return {"server": "triton", "version": tag.lstrip("v"), "grammar": "getopt_long",
            "provenance": {"source": f"{PINNED['triton'][2]} {tag} ({commit}) {PINNED['triton'][1]} option groups",
                           "generator": "gpuplatform/server_sources.py",
                           "bool_values": "ParseOption<bool>: true, on, 1, false, off, 0 (any case)"},
            "entrypoints": {"tritonserver": {"options": options}}}


def _git_show(git_dir: Path, tag: str, path: str) -> tuple[str, str]:
    text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{tag}:{path}"], capture_output=True,
                          text=True, check=True).stdout
    commit = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", f"{tag}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return text, commit


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpuplatform.server_sources")
    ap.add_argument("--tgi-git", type=Path)
    ap.add_argument("--triton-git", type=Path)
    ap.add_argument("--out", type=Path, default=TABLES)
    args = ap.parse_args(argv)
    for server, git_dir, build in (("tgi", args.tgi_git, tgi_table), ("triton", args.triton_git, triton_table)):
        if git_dir is None:
            continue
        tag, path, _ = PINNED[server]
        text, commit = _git_show(git_dir, tag, path)
        print(f"{server} {tag}: {write_table(build(text, tag, commit), args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
