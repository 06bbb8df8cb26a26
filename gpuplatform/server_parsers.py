"""The inference servers' own command-line parsers, run from their released wheels in an isolated virtualenv: the
generator of the flag tables in ``catalogs/server_flags/`` and the reference the differential test compares the
package's reading with (tests/gpuplatform/test_server_parsers.py).

    python -m gpuplatform.server_parsers generate            # every pinned server version -> catalogs/server_flags/
    python -m gpuplatform.server_parsers env                 # only build the environments (CI does, before the tests)

Each environment holds the server's wheel installed with ``--no-deps`` plus the few pure-Python packages its parser
module imports (``PARSER_DEPENDENCIES``); torch, transformers and the CUDA kernels are not installed: the probe
(``server_parsers_probe.py``) puts inert stand-ins in their place, since building an argparse parser never calls
them. An environment is built once and kept under ``$GPUPLATFORM_PARSERS_DIR`` (default
``~/.cache/gpuplatform/server-parsers``), a few hundred MB for vLLM's wheel, a minute to build from PyPI.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Optional

from gpuplatform.catalogs.server_profiles import PROFILES

PINNED: dict[str, tuple[str, ...]] = {name: p.flag_tables.releases for name, p in PROFILES.items()
                                      if not p.native_parser}
"""The server versions whose parsers the tables are generated from (each server's profile module,
``flag_tables``)."""

PARSER_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "vllm": ("pydantic>=2.10", "pyyaml", "regex", "cachetools", "psutil", "numpy", "requests", "tqdm",
             "typing_extensions>=4.10", "filelock", "msgspec", "cloudpickle", "pyzmq", "openai>=1.52.0,<=1.90.0",
             "fastapi", "uvicorn", "prometheus_client", "huggingface-hub", "blake3", "py-cpuinfo",
             "partial-json-parser", "pybase64", "email-validator", "python-multipart"),
    "sglang": ("pydantic", "pyyaml", "regex", "psutil", "numpy", "requests", "tqdm", "typing_extensions", "filelock",
               "msgspec", "pyzmq", "fastapi", "uvicorn", "huggingface-hub", "orjson", "email-validator"),
}
"""What each parser's import chain needs that has no stand-in: the pure-Python packages of the server's own
requirements (its wheel's ``Requires-Dist``) that ``import`` reaches on the way to the parser."""

PYPI_NAME = {"vllm": "vllm", "sglang": "sglang"}
PROBE = Path(__file__).with_name("server_parsers_probe.py")
TABLES = Path(__file__).resolve().parent.parent / "catalogs" / "server_flags"


class ParserEnvError(RuntimeError):
    """The server's parser could not be built or run (no network to PyPI, an import the probe cannot stand in for)."""


def cache_root() -> Path:
    return Path(os.environ.get("GPUPLATFORM_PARSERS_DIR")
                or os.path.join(os.path.expanduser("~"), ".cache", "gpuplatform", "server-parsers"))


def env_dir(server: str, version: str) -> Path:
    return cache_root() / f"{server}-{version}"


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def env_ready(server: str, version: str) -> bool:
    return (env_dir(server, version) / ".complete").is_file()


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise ParserEnvError(f"{' '.join(map(str, cmd[:6]))} ... failed:\n{r.stderr[-3000:]}")
    return r


def ensure_env(server: str, version: str) -> Path:
    """The isolated environment of ``server==version`` (built on first use): its wheel without dependencies, plus
    ``PARSER_DEPENDENCIES``. Returns its directory; its ``wheel.json`` names the wheel and its sha256."""
    env = env_dir(server, version)
    if env_ready(server, version):
        return env
    env.mkdir(parents=True, exist_ok=True)
    if not _python(env).exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
    wheels = env / "wheels"
    wheels.mkdir(exist_ok=True)
    pip = [_python(env), "-m", "pip"]
    _run(pip + ["download", "-q", "--no-deps", "--only-binary=:all:", "-d", wheels, f"{PYPI_NAME[server]}=={version}"])
    wheel = next(w for w in sorted(wheels.glob("*.whl")) if w.name.lower().startswith(PYPI_NAME[server]))
    _run(pip + ["install", "-q", "--no-deps", wheel])
    _run(pip + ["install", "-q", *PARSER_DEPENDENCIES[server]])
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (env / "wheel.json").write_text(json.dumps({"wheel": wheel.name, "sha256": digest}))
    wheel.unlink()  # installed: the wheel itself (hundreds of MB for vLLM) is not kept, nor its compiled kernels,
    for native in (env / "lib").glob(f"python*/site-packages/{server}/**/*.so"):  # which the probe stands in for
        native.unlink()
    (env / ".complete").write_text("")
    return env


def _probe(server: str, version: str, mode: str, stdin: Optional[str] = None) -> object:
    env = ensure_env(server, version)
    r = subprocess.run([str(_python(env)), str(PROBE), mode, server], input=stdin, capture_output=True, text=True,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=600)
    if r.returncode != 0:
        raise ParserEnvError(f"the {server} {version} parser failed to {mode}:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def dump_table(server: str, version: str, table: Optional[dict] = None) -> dict:
    """Every option of every entry point of ``server==version``, as its parser declares it, with provenance."""
    table = dict(table) if table is not None else _probe(server, version, "dump")
    wheel = json.loads((env_dir(server, version) / "wheel.json").read_text())
    table = {"server": server, "version": version,
             "provenance": {"source": f"PyPI {PYPI_NAME[server]}=={version}", "wheel": wheel["wheel"],
                            "sha256": wheel["sha256"], "generator": "gpuplatform/server_parsers.py",
                            "python": table.pop("python"), "stand_ins": table.pop("stubbed_imports")},
             **{k: v for k, v in table.items() if k != "server"}}
    return table


def real_readings(server: str, version: str, items: list[dict]) -> list[dict]:
    """Each ``{"entrypoint", "argv"}`` read by the server's own parser: ``{"accepted", "values"}`` or
    ``{"accepted": False, "error"}``."""
    return _probe(server, version, "parse", json.dumps(items))  # type: ignore[return-value]


def reference(server: str, version: str, items: list[dict]) -> tuple[dict, list[dict]]:
    """The table and the readings of ``items`` (see :func:`real_readings`), from one run of the server's parser."""
    out = _probe(server, version, "both", json.dumps(items))
    return dump_table(server, version, out["table"]), out["readings"]  # type: ignore[index]


def table_path(server: str, version: str, root: Path = TABLES) -> Path:
    return root / f"{server}-{version}.json"


def write_table(table: dict, root: Path = TABLES) -> Path:
    path = table_path(table["server"], table["version"], root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return path


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpuplatform.server_parsers")
    ap.add_argument("mode", choices=("generate", "env"))
    ap.add_argument("--server", choices=sorted(PINNED))
    ap.add_argument("--out", type=Path, default=TABLES)
    args = ap.parse_args(argv)
    for server, versions in sorted(PINNED.items()):
        if args.server and server != args.server:
            continue
        for version in versions:
            try:
                if args.mode == "env":
                    print(f"{server} {version}: {ensure_env(server, version)}")
                else:
                    print(f"{server} {version}: {write_table(dump_table(server, version), args.out)}")
            except ParserEnvError as e:
                print(f"{server} {version}: {e}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
