"""The package reads a server's command line exactly as the server's own parser does: the real vLLM 0.9.2 and
SGLang 0.5.4 parsers (their released wheels, in the isolated environments ``gpuplatform/server_parsers.py``
builds) and the package's reading (catalogs/server_grammar.py over the generated tables) are given the same corpus
(tests/server_corpus.py) and must accept the same lines, refuse the same lines with the same message, and read the
same value for every option.

Locally, without the environments, these tests skip and say how to build them; under CI (CI=true) they fail:
``.ci/run`` builds them before the suite."""
import json
import os

import pytest

from gpuplatform import server_parsers
from gpuplatform.catalogs import server_grammar as g
from gpuplatform.server_parsers_probe import _jsonable

from server_corpus import corpus

pytestmark = pytest.mark.xdist_group("server-parsers")

PINNED = [(s, v) for s, versions in sorted(server_parsers.PINNED.items()) for v in versions]


def _require_env(server: str, version: str) -> None:
    if server_parsers.env_ready(server, version):
        return
    how = "build them with `.venv/bin/python -m gpuplatform.server_parsers env` (PyPI, a few minutes once)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"the {server} {version} parser environment is missing under CI; {how}")
    pytest.skip(f"no {server} {version} parser environment: {how}")


_REAL: dict = {}


def _reference(server: str, version: str) -> tuple:
    """(corpus, the server's table today, its readings of the corpus): one run of its parser per module."""
    key = (server, version)
    if key not in _REAL:
        items = corpus(server, version)
        _REAL[key] = (items, *server_parsers.reference(server, version, items))
    return _REAL[key]


def _message(error: str) -> str:
    """argparse's message without its ``prog: error:`` prefix; an exception's without its class."""
    if ": error: " in error:
        return error.split(": error: ", 1)[1]
    return error.split(": ", 1)[1] if error.split(": ", 1)[0].isidentifier() else error


def _ours(server: str, version: str, item: dict) -> dict:
    r = g.read(server, version, item["entrypoint"], item["argv"])
    if not r.accepted:
        return {"accepted": False, "error": r.error}
    return {"accepted": True, "values": {k: _jsonable(v) for k, v in r.values.items()}}


def _opaque(server: str, version: str, entry: str) -> set:
    return {o["dest"] for o in g.options(server, version, entry)
            if g.is_opaque(o)}


@pytest.mark.parametrize("server,version", PINNED)
def test_the_package_reads_every_line_as_the_server_does(server, version, record_property):
    _require_env(server, version)
    items, _, real = _reference(server, version)
    assert len(items) >= 300
    assert len(real) == len(items)
    differences, accepted, refused = [], 0, 0
    for item, theirs in zip(items, real):
        ours = _ours(server, version, item)
        line = " ".join([g.ENTRYPOINTS[server][item["entrypoint"]]] + item["argv"])
        if ours["accepted"] != theirs["accepted"]:
            differences.append(f"{line}: server {'accepts' if theirs['accepted'] else 'refuses: ' + theirs['error']};"
                               f" package {'accepts' if ours['accepted'] else 'refuses: ' + ours['error']}")
            continue
        if not theirs["accepted"]:
            refused += 1
            if theirs["error"] == "exit 0" and "prints its help" in ours["error"]:
                continue  # --help: argparse prints the help and exits 0
            if _message(theirs["error"]) != ours["error"]:
                differences.append(f"{line}: server says {theirs['error']!r}, package {ours['error']!r}")
            continue
        accepted += 1
        skip = _opaque(server, version, item["entrypoint"])
        for dest, value in theirs["values"].items():
            if dest in skip and dest in item["argv"]:
                continue
            if dest not in skip and ours["values"].get(dest, "<missing>") != value:
                differences.append(f"{line}: {dest} is {value!r} to the server, {ours['values'].get(dest)!r} here")
    record_property("figures", json.dumps({"server": server, "version": version, "lines": len(items),
                                           "accepted": accepted, "refused": refused,
                                           "differences": len(differences)}))
    assert not differences, f"{len(differences)} of {len(items)} lines differ:\n" + "\n".join(differences[:40])
    assert accepted > 100 and refused > 100  # both ways, not one


@pytest.mark.parametrize("server,version", PINNED)
def test_the_table_is_what_the_parser_declares_today(server, version):
    """The committed table is the generator's output for the pinned wheel (the same wheel, the same options)."""
    _require_env(server, version)
    fresh = _reference(server, version)[1]
    committed = g.flag_table(server, version)
    assert committed["provenance"]["sha256"] == fresh["provenance"]["sha256"]
    assert committed["entrypoints"] == json.loads(json.dumps(fresh["entrypoints"]))


@pytest.mark.parametrize("server,version", PINNED)
def test_each_type_reads_the_probe_texts_as_the_parser_did(server, version):
    """The type functions rebuilt here give, for every option, the answers the server's own type gave the probe's
    texts when the table was generated (no environment needed: the answers are in the table)."""
    checked = 0
    for entry in g.ENTRYPOINTS[server]:
        for o in g.options(server, version, entry):
            if "probe" not in o or g.is_opaque(o):
                continue
            read = g.type_reader(o)
            for text, answer in o["probe"].items():
                try:
                    got = {"value": _jsonable(read(text))}
                except Exception:  # noqa: BLE001 - argparse reports any failure as an invalid value
                    got = {"error": True}
                want = {"error": True} if "error" in answer else answer
                if "object" in answer:
                    continue
                assert got == want, f"{server} {version} {o['option_strings']} type {o['type']} reads {text!r}"
                checked += 1
    assert checked > 100
