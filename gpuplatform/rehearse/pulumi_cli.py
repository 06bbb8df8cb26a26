"""The real Pulumi CLI (built by ``make engines``) on a project, with a local file backend in a scratch directory.

Every command runs with:

* ``PULUMI_HOME`` and ``PULUMI_BACKEND_URL=file://...`` in the scratch directory: the user's own Pulumi login,
  plugins and stacks are never read or written;
* ``PULUMI_CONFIG_PASSPHRASE``: a fixed passphrase for the secrets of that throwaway state (the stack's own secrets
  provider, as ``pulumi stack init`` makes it for a file backend);
* ``PULUMI_SKIP_UPDATE_CHECK`` and ``PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION``: nothing is downloaded; a plugin
  the engines directory does not hold is an error that names it;
* ``PATH`` with the engines directory first (``pulumi``, and ``pulumi-resource-kubernetes``, which the engine takes
  from ``PATH`` before its plugin cache: an "ambient" plugin, and the engine warns that it used one) and then a
  directory holding ``pulumi-language-python``, a two-line launcher of gpu-platform's own language host
  (:mod:`gpuplatform.rehearse.language_host`, since upstream's cannot be built from the Go module proxy) written
  here at run time for the Python that runs this module.

Each step has a bound (``timeout``); past it the CLI is interrupted (it stops its plugins), then killed. A step that
fails raises :class:`PulumiCliError` naming the step and showing the CLI's own error. Results are read from the
engine's event log (``--event-log``, which ``PULUMI_DEBUG_COMMANDS=true`` enables): the summary's resource changes, every resource operation, the diagnostics and
the policy violations.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

import yaml

from gpuplatform.rehearse.language_host import LANGUAGE_HOST_NAME

LANGUAGE_HOST = Path(__file__).with_name("language_host.py")
PASSPHRASE = "gpu-platform-local-state"
"""Encrypts the secrets of the scratch state only; the state is deleted with the scratch directory."""
PROVIDER_BINARY = "pulumi-resource-kubernetes"
STOP_GRACE_SECONDS = 20.0


class PulumiCliError(RuntimeError):
    """A CLI step failed or ran past its bound; the message names the step and shows the CLI's error."""


# ------------------------------------------------------------------------------------------------ events
@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    urn: str = ""


@dataclass(frozen=True)
class PolicyViolation:
    policy: str
    level: str
    """``mandatory``, ``advisory`` (or ``remediate``), as the engine reports it."""
    message: str
    urn: str
    pack: str = ""

    @property
    def resource_type(self) -> str:
        """The resource's type token (``kubernetes:apps/v1:Deployment``) from its URN."""
        return urn_type(self.urn)

    @property
    def resource_name(self) -> str:
        return self.urn.rsplit("::", 1)[-1] if self.urn else ""


def urn_type(urn: str) -> str:
    """``urn:pulumi:STACK::PROJECT::PARENT$TYPE::NAME`` -> ``TYPE``."""
    if not urn:
        return ""
    return urn.split("::")[2].rsplit("$", 1)[-1]


@dataclass
class Outcome:
    """One CLI step: its command, exit code, output, and what the engine's event log says happened."""

    step: str
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    changes: dict[str, int] = field(default_factory=dict)
    """The summary's count per operation (``create``, ``same``, ``update``, ``delete``, ...)."""
    operations: list[tuple[str, str]] = field(default_factory=list)
    """(operation, URN) of every resource step, in the order the engine finished them."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    violations: list[PolicyViolation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def errors(self) -> list[str]:
        return [d.message.strip() for d in self.diagnostics if d.severity == "error"]

    def explain(self) -> str:
        """The CLI's own account of a failure: its error diagnostics, else the end of its output."""
        told = self.errors()
        mandatory = [f"{v.policy} ({v.resource_type} {v.resource_name}): {v.message.strip()}"
                     for v in self.violations if v.level == "mandatory"]
        lines = told + [f"mandatory policy violation {m}" for m in mandatory]
        tail = "\n".join((self.stderr.strip() or self.stdout.strip()).splitlines()[-25:])
        return "\n".join(lines + ([tail] if tail else []))


def read_event_log(path: Path, outcome: Outcome) -> None:
    """Fill ``outcome`` from the engine's event log (one JSON engine event per line)."""
    if not path.exists():
        return
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if "summaryEvent" in event:
            outcome.changes = {k: int(v) for k, v in (event["summaryEvent"].get("resourceChanges") or {}).items()}
        elif "resOutputsEvent" in event:
            meta = event["resOutputsEvent"].get("metadata") or {}
            outcome.operations.append((meta.get("op", ""), meta.get("urn", "")))
        elif "diagnosticEvent" in event:
            d = event["diagnosticEvent"]
            if not d.get("ephemeral") and d.get("severity") != "debug":
                outcome.diagnostics.append(Diagnostic(d.get("severity", ""), d.get("message", ""), d.get("urn", "")))
        elif "policyEvent" in event:
            p = event["policyEvent"]
            outcome.violations.append(PolicyViolation(p.get("policyName", ""), p.get("enforcementLevel", ""),
                                                      p.get("message", ""), p.get("resourceUrn", ""),
                                                      p.get("policyPackName", "")))


# ------------------------------------------------------------------------------------------------ projects
def write_project(dest: Path, *, name: str, program: str, stacks: dict[str, dict],
                  virtualenv: Optional[Path] = None, description: str = "") -> Path:
    """A Pulumi project folder: ``Pulumi.yaml`` (runtime python, the pip toolchain with ``virtualenv``, by default
    the environment running this module), ``__main__.py`` and one ``Pulumi.<stack>.yaml`` per stack (its
    ``config:`` map)."""
    dest.mkdir(parents=True, exist_ok=True)
    venv = Path(virtualenv or sys.prefix).resolve()
    doc = {"name": name, "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(venv)}}}
    if description:
        doc["description"] = description
    (dest / "Pulumi.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (dest / "__main__.py").write_text(program)
    for stack, config in stacks.items():
        (dest / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return dest


def project_from_checkout(checkout: Path, dest: Path, stack: str, stack_file: Optional[Path] = None,
                          virtualenv: Optional[Path] = None) -> Path:
    """gpu-platform's own project (its ``Pulumi.yaml`` and ``__main__.py``) in ``dest``, with ``stack_file``
    (default ``stacks/Pulumi.<stack>.yaml`` of the checkout) as ``Pulumi.<stack>.yaml`` beside it: the CLI writes
    the stack's encryption salt into that file, which must not be the checkout's. The ``virtualenv`` option becomes
    an absolute path (default: the environment running this module), so the copy runs the checkout's
    environment."""
    doc = yaml.safe_load((checkout / "Pulumi.yaml").read_text())
    doc.pop("stackConfigDir", None)
    runtime = doc.get("runtime")
    if isinstance(runtime, str):
        runtime = {"name": runtime}
    runtime.setdefault("options", {})["virtualenv"] = str(Path(virtualenv or sys.prefix).resolve())
    runtime["options"].setdefault("toolchain", "pip")
    doc["runtime"] = runtime
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "Pulumi.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    main = doc.get("main", ".")
    if main not in (".", "./", "__main__.py"):
        raise PulumiCliError(f"{checkout / 'Pulumi.yaml'}: main {main!r}; only a project whose program is its "
                             "__main__.py can be copied")
    shutil.copyfile(checkout / "__main__.py", dest / "__main__.py")
    source = stack_file or checkout / doc.get("stackConfigDir", "stacks") / f"Pulumi.{stack}.yaml"
    if not Path(source).is_file():
        raise PulumiCliError(f"no stack file {source}")
    shutil.copyfile(source, dest / f"Pulumi.{stack}.yaml")
    return dest


# ------------------------------------------------------------------------------------------------ the CLI
def write_language_host_launcher(directory: Path, python: str = sys.executable) -> Path:
    """``directory/pulumi-language-python``: starts :mod:`gpuplatform.rehearse.language_host` with ``python``."""
    directory.mkdir(parents=True, exist_ok=True)
    launcher = directory / LANGUAGE_HOST_NAME
    launcher.write_text("#!/bin/sh\n"
                        "# gpu-platform's Python language host (gpuplatform/rehearse/language_host.py)\n"
                        f"exec {shlex.quote(python)} {shlex.quote(str(LANGUAGE_HOST))} \"$@\"\n")
    launcher.chmod(0o755)
    return launcher


class PulumiCli:
    """The CLI in ``engines`` with its state, home and launcher in ``workdir`` (made if missing)."""

    def __init__(self, engines: Path, workdir: Path, *, env: Optional[dict] = None,
                 python: str = sys.executable) -> None:
        self.engines = Path(engines)
        missing = [b for b in ("pulumi", PROVIDER_BINARY) if not (self.engines / b).exists()]
        if missing:
            raise PulumiCliError(f"{', '.join(missing)} not in {self.engines}: run `make engines`")
        self.workdir = Path(workdir)
        self.home = self.workdir / "pulumi-home"
        self.state = self.workdir / "state"
        self.bin = self.workdir / "bin"
        for d in (self.home, self.state):
            d.mkdir(parents=True, exist_ok=True)
        write_language_host_launcher(self.bin, python)
        self.extra_env = dict(env or {})
        self._step = 0

    @property
    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
        env.update({
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": self.state.resolve().as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            # enables `--event-log` (as the Automation API does; pkg/cmd/pulumi/operations/up.go)
            "PULUMI_DEBUG_COMMANDS": "true",
            "NO_COLOR": "1",
            "PATH": os.pathsep.join([str(self.engines), str(self.bin), os.environ.get("PATH", "")]),
        })
        env.update(self.extra_env)
        return env

    def run(self, step: str, args: Sequence[str], *, cwd: Path, timeout: float, check: bool = True,
            events: bool = True) -> Outcome:
        """``pulumi ARGS`` in ``cwd``, bounded by ``timeout`` seconds; with ``check``, a non-zero exit raises."""
        self._step += 1
        log = self.workdir / f"events-{self._step:02d}.jsonl"
        command = [str(self.engines / "pulumi"), *args, "--non-interactive"]
        if events:
            command += ["--event-log", str(log)]
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = _stop(process)
            outcome = Outcome(step, command, process.returncode, stdout, stderr, time.monotonic() - started)
            read_event_log(log, outcome)
            raise PulumiCliError(f"{step}: `pulumi {' '.join(args)}` ran past its bound of {timeout:.0f} s and was "
                                 f"stopped\n{outcome.explain()}") from None
        outcome = Outcome(step, command, process.returncode, stdout, stderr, time.monotonic() - started)
        read_event_log(log, outcome)
        if check and not outcome.ok:
            raise PulumiCliError(f"{step}: `pulumi {' '.join(args)}` failed (exit {outcome.returncode}):\n"
                                 f"{outcome.explain()}")
        return outcome

    # -------------------------------------------------------------------------------------------- steps
    def version(self) -> str:
        return self.run("pulumi version", ["version"], cwd=self.workdir, timeout=30, events=False).stdout.strip()

    def stack_init(self, project: Path, stack: str, timeout: float = 60) -> Outcome:
        return self.run(f"stack init {stack}", ["stack", "init", stack], cwd=project, timeout=timeout, events=False)

    def up(self, project: Path, stack: str, timeout: float = 600, check: bool = True) -> Outcome:
        return self.run(f"up {stack}", ["up", "--stack", stack, "--yes", "--skip-preview", "--json"],
                        cwd=project, timeout=timeout, check=check)

    def preview(self, project: Path, stack: str, *, expect_no_changes: bool = False,
                policy_packs: Iterable[Path] = (), policy_pack_configs: Iterable[Path] = (),
                timeout: float = 300, check: bool = True) -> Outcome:
        args = ["preview", "--stack", stack, "--json"]
        if expect_no_changes:
            args.append("--expect-no-changes")
        for pack in policy_packs:
            args += ["--policy-pack", str(pack)]
        for config in policy_pack_configs:
            args += ["--policy-pack-config", str(config)]
        return self.run(f"preview {stack}", args, cwd=project, timeout=timeout, check=check)

    def destroy(self, project: Path, stack: str, timeout: float = 300, check: bool = True) -> Outcome:
        return self.run(f"destroy {stack}", ["destroy", "--stack", stack, "--yes", "--skip-preview"],
                        cwd=project, timeout=timeout, check=check)

    def resources(self, project: Path, stack: str, timeout: float = 60) -> list[str]:
        """The URNs in the stack's state (``pulumi stack export``)."""
        done = self.run(f"stack export {stack}", ["stack", "export", "--stack", stack], cwd=project,
                        timeout=timeout, events=False)
        try:
            deployment = json.loads(done.stdout).get("deployment") or {}
        except ValueError as exc:
            raise PulumiCliError(f"stack export {stack}: not JSON ({exc}):\n{done.stdout[-500:]}") from None
        return [r["urn"] for r in deployment.get("resources") or []]


def _stop(process: subprocess.Popen) -> tuple[str, str]:
    """Interrupt the CLI (it stops its plugins and writes its state), then kill its process group."""
    try:
        process.send_signal(signal.SIGINT)
        return process.communicate(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return process.communicate(timeout=STOP_GRACE_SECONDS)


def scratch(prefix: str = "gpuplatform-pulumi-") -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
