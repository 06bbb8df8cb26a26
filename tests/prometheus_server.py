"""A real Prometheus server on loopback, for tests that need its scraping, staleness and query engine.

``promtool test rules`` evaluates PromQL on series written in its notation, which cannot hold stale markers written
by a failed scrape or the timestamps of real scrapes. This starts a ``prometheus`` binary with a temporary config
and TSDB directory, on a free port of 127.0.0.1, and talks to its HTTP API (``/api/v1/query``,
``/api/v1/query_range``; docs/querying/api.md).

Two releases, whose query semantics differ where ``gpuplatform.simulate.promql.Semantics`` says:

* ``stack``: the release the stack deploys (``catalogs/versions.py`` ``PROMETHEUS_VERSION["self-hosted"]``), its
  ``prometheus`` and ``promtool`` built from the Go module by engines/build (engines/versions.env);
* ``debian``: Debian's ``prometheus`` package (2.42, with promtool), the oldest release the evaluator models.

Locally a missing binary skips the test; in CI (``CI=true``) it fails it: a runner without either release cannot
turn the suite silently green.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from gpuplatform.catalogs.versions import prometheus_version

INSTALL_HINT = "install it with: apt-get install -y prometheus"
RELEASES = ("debian", "stack")
"""The Prometheus releases the tests run (module docstring); a fixture parametrized over them runs its tests on
each."""
STACK_RELEASE = prometheus_version("self-hosted")


@functools.lru_cache(maxsize=1)
def _engines() -> tuple[Path | None, str]:
    from gpuplatform.rehearse.engines import EnginesMissing, engines_dir

    try:
        return engines_dir(), ""
    except EnginesMissing as exc:
        return None, str(exc)


def find_tool(name: str, release: str = "debian") -> tuple[str | None, str]:
    """``name`` (``prometheus`` or ``promtool``) of ``release``, and how to get it when it is missing.

    ``debian``: ``$PROMETHEUS``/``$PROMTOOL``, else the one on PATH. ``stack``: the engines' directory (``make
    engines``; ``GPUPLATFORM_ENGINES_BIN`` names it, else engines/build finds the set built for this checkout)."""
    if release == "debian":
        return os.environ.get(name.upper()) or shutil.which(name), f"{name} not found on PATH; {INSTALL_HINT}"
    if release != "stack":
        raise ValueError(f"release {release!r}: one of {', '.join(RELEASES)}")
    engines, why = _engines()
    shown = ".".join(map(str, STACK_RELEASE))
    if engines is None:
        return None, f"{name} {shown} (the release the stack deploys) is not built: {why}"
    binary = engines / name
    if not binary.exists():
        return None, f"{name} {shown} is not in {engines}: run `make engines`"
    return str(binary), ""


def require_tool(name: str, binary: str | None, hint: str = "") -> str:
    """``binary``, or the test stops: skipped locally, failed in CI (``CI=true``), where the tool must be there."""
    if binary:
        return binary
    hint = hint or f"{name} not found on PATH; {INSTALL_HINT}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(hint, pytrace=False)
    pytest.skip(hint)


def require_release(name: str, release: str) -> str:
    """``name`` of ``release`` (:func:`find_tool`), checked to be that release: the stack's must report the version
    the stack deploys, Debian's a 2.x (its semantics are the 2.x side of ``promql.Semantics``)."""
    binary = require_tool(name, *find_tool(name, release))
    found = prometheus_release(binary)
    if release == "stack" and found != STACK_RELEASE:
        pytest.fail(f"{binary} reports {'.'.join(map(str, found))}, the stack deploys "
                    f"{'.'.join(map(str, STACK_RELEASE))}: rebuild the engines (`make engines`)", pytrace=False)
    if release == "debian" and found[0] != 2:
        pytest.fail(f"{binary} reports {'.'.join(map(str, found))}: the debian release is expected to be a 2.x "
                    "(set PROMETHEUS/PROMTOOL to Debian's package)", pytrace=False)
    return binary


def require_prometheus(release: str = "debian") -> str:
    return require_release("prometheus", release)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """``with PrometheusServer(binary, tmp_path, scrape_configs, scrape_interval="1s") as prom: prom.query(...)``."""

    def __init__(self, binary: str, workdir: Path, scrape_configs: list[dict], *, scrape_interval: str = "1s",
                 extra_args: tuple[str, ...] = ()) -> None:
        self.binary, self.workdir = binary, Path(workdir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {"global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval,
                             "evaluation_interval": scrape_interval},
                  "scrape_configs": scrape_configs}
        self.config_file = self.workdir / "prometheus.yml"
        self.config_file.write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = self.workdir / "prometheus.log"
        self.args = [binary, f"--config.file={self.config_file}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                     f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn", *extra_args]
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "PrometheusServer":
        self._log_handle = self.log.open("w")
        self.proc = subprocess.Popen(self.args, stdout=self._log_handle, stderr=subprocess.STDOUT, cwd=self.workdir)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"prometheus exited {self.proc.returncode}:\n{self.log.read_text()}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        self.__exit__(None, None, None)
        pytest.fail(f"prometheus did not become ready in 30 s:\n{self.log.read_text()}", pytrace=False)

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_handle.close()

    def api(self, path: str, **params) -> dict:
        """``GET /api/v1/<path>?params``: the parsed answer, failing the test on an error status."""
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=30) as r:
                doc = json.load(r)
        except urllib.error.HTTPError as exc:
            pytest.fail(f"/api/v1/{path} {params}: {exc.code} {exc.read().decode()}", pytrace=False)
        if doc.get("status") != "success":
            pytest.fail(f"/api/v1/{path} {params}: {doc}", pytrace=False)
        return doc

    def query(self, expr: str, at: float | None = None) -> dict:
        return self.api("query", query=expr, time=None if at is None else f"{at:.3f}")

    def query_range(self, expr: str, start: float, end: float, step: float) -> dict:
        """The documented export: ``/api/v1/query_range?query=&start=&end=&step=``."""
        return self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{step:g}")

    def raw_samples(self, selector: str, at: float, window_s: int) -> list[dict]:
        """Every sample Prometheus stored for ``selector`` in the ``window_s`` before ``at`` (a range selector as
        an instant query returns the samples with their own timestamps; stale markers are not returned)."""
        return self.query(f"{selector}[{window_s}s]", at)["data"]["result"]

    def targets_healthy(self) -> int:
        return sum(t.get("health") == "up" for t in self.api("targets")["data"]["activeTargets"])


_RELEASES: dict[str, tuple[int, int, int]] = {}


def prometheus_release(binary: str) -> tuple[int, int, int]:
    """(major, minor, patch) of ``prometheus --version`` or ``promtool --version`` (``2.42.0+ds`` -> (2, 42, 0))."""
    if binary not in _RELEASES:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
        version = (out.stdout + out.stderr).split("version", 1)[1].split()[0]
        major, minor, patch = re.match(r"v?(\d+)\.(\d+)\.(\d+)", version).groups()
        _RELEASES[binary] = (int(major), int(minor), int(patch))
    return _RELEASES[binary]
