"""Shared test helpers: stack files, offline synthesis, resource lookup, fresh virtualenvs."""
import contextlib
import copy
import os
import subprocess
from pathlib import Path

import pytest

from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.synth import stack_config_from_namespace, synthesize

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# the files the tests read (manifests, recorded API answers, series), shared by every test folder
FIXTURES_DIR = TESTS / "fixtures"
STACKS = sorted(p.stem.removeprefix("Pulumi.") for p in (REPO / "stacks").glob("Pulumi.*.yaml"))


def stack_raw(stack: str) -> dict:
    return copy.deepcopy(namespace_from_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml"))


def synth(raw: dict):
    return synthesize(stack_config_from_namespace(raw))


def of_type(records, type_token: str) -> list:
    return [r for r in records if r.type == type_token]


def one(records, type_token: str, name: str | None = None):
    found = [r for r in of_type(records, type_token) if name is None or r.name == name]
    assert len(found) == 1, f"expected one {type_token} {name or ''}, got {[r.name for r in found]}"
    return found[0]


def wheelhouse():
    """Wheels `make install` collects (GPUPLATFORM_WHEELHOUSE): fresh venvs install offline, from there only."""
    path = os.environ.get("GPUPLATFORM_WHEELHOUSE")
    if path and (REPO / path / ".complete").is_file():
        return REPO / path
    if os.environ.get("CI") == "true":
        pytest.fail("GPUPLATFORM_WHEELHOUSE names no complete wheelhouse; run the tests with `make test`")
    pytest.skip("no wheelhouse: run `make test` (it collects the wheels fresh virtualenvs install from)")


def clean_env(venv_root) -> dict:
    """The environment of a process run from a fresh virtualenv: only its own packages, and its bytecode cached
    under the venv (installed with ``--no-compile``, each module compiles once, on first import, as on a user's
    machine, even where the caller's environment says not to write bytecode; the checkout gets none)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = f"{venv_root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPYCACHEPREFIX"] = str(Path(venv_root) / "pycache")
    return env


@contextlib.contextmanager
def served_pack(python, pack_dir, env):
    """A policy pack started as the Python language host starts it (``<venv>/bin/python -u -m pulumi.policy
    <engine> <pack folder>`` in the pack folder), and a stub that speaks to it over loopback as the engine does."""
    import grpc
    from pulumi.runtime.proto import analyzer_pb2_grpc

    proc = subprocess.Popen([python, "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(pack_dir)], cwd=pack_dir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit(), f"the pack did not start: {port!r}\n{proc.stderr.read() if proc.poll() else ''}"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def cli(*args) -> tuple[int, str, str]:
    """``gpuplatform ARGS`` in-process: (exit code, stdout, stderr)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from gpuplatform.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def cfg_of(stack: str):
    """The validated config of one of the repository's stack files."""
    from gpuplatform.components.stack_config import load_stack_file

    return load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")


def scaled_on(w: dict, metric: str, target: float) -> dict:
    """A raw workload scaled on ``metric`` at ``target``, its SLO (when it states one) moved to the same metric at the
    target plus the HPA's 10 % tolerance: an SLO names a metric the workload's server or GPU exporter serves, so a
    variant that changes the metric changes its SLO too."""
    w["autoscaling"]["metrics"] = [{"metric": metric, "target": target}]
    if "slo" in w:
        w["slo"] = {**w["slo"], "objectives": [{"metric": metric, "below": round(target * 1.1, 3)}]}
    return w


def assert_rejected(raw: dict, path: str, *fragments: str) -> None:
    """Validation refuses ``raw`` at ``path`` with a message holding every fragment."""
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    with pytest.raises(ConfigError) as info:
        load(raw)
    issues = [i for i in info.value.issues if i.path == path]
    assert issues, info.value.render()
    message = " ".join(i.message for i in issues)
    for fragment in fragments:
        assert fragment in message, message
