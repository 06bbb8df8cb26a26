"""A Pulumi language host for Python programs and Python policy packs, written for gpu-platform's rehearsal.

Why this host is ours
---------------------
The Pulumi CLI runs a Python program (and a Python policy pack) through a separate executable,
``pulumi-language-python``, that it finds next to itself or on ``PATH``. Upstream builds it from the Go module
``github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3``, a module nested in the pulumi repository that
the ``sdk/v3`` module's zip leaves out and that the Go module proxy does not serve (every version and commit answers
403), so the engines built from the proxy (``engines/build``) have a CLI but no Python language host. This module is
that host, written from the protocol: a gRPC ``pulumirpc.LanguageRuntime`` server on the stubs the ``pulumi`` Python
SDK ships (``pulumi.runtime.proto.language_pb2_grpc``). It is not Pulumi's host and does less (below); the rehearsal
and the engine tests say which host ran.

What was read to write it (the protocol, not code to copy): pulumi ``sdk/python/cmd/pulumi-language-python/main.go``
(the upstream host: ``Run``, ``RunPlugin``, ``GetRequiredPackages``, ``InstallDependencies``, ``Handshake``,
``parseOptions``), ``sdk/python/cmd/pulumi-language-python-exec`` in the ``sdk/v3`` module at v3.276.0 (what the
program process receives), and on the engine side at v3.276.0 ``pkg/resource/plugin/langruntime_plugin.go`` (the
calls the engine makes and how it reads the answers), ``pkg/resource/plugin/plugin.go`` (a plugin prints its port
on stdout; the engine passes its own address as the last argument and kills the plugin's process tree when done),
``pkg/resource/plugin/analyzer_plugin.go`` (a policy pack whose runtime has a language host is started through that
host's ``RunPlugin``), ``sdk/go/common/workspace/plugins.go`` (a plugin on ``PATH`` is used before any installed
one) and ``pkg/engine/plugins.go`` (what the engine does with the packages a host reports).

What it implements
------------------
* start-up: ``pulumi-language-python [flags] ENGINE_ADDRESS``; serves on a loopback port it prints on stdout, and
  stops when the CLI that started it is gone;
* ``Handshake`` (the engine address, when the engine attaches rather than starts the host), ``GetPluginInfo``;
* ``GetRequiredPackages`` / ``GetRequiredPlugins``: the resource plugins the program's virtualenv declares
  (each installed package's ``pulumi-plugin.json``, e.g. ``pulumi_kubernetes`` declares ``kubernetes`` at its
  version); the engine then finds each one on ``PATH`` or in its plugin cache;
* ``Run``: the program in its virtualenv's Python through :mod:`gpuplatform.rehearse.run_program`, with the stack's
  configuration in ``PULUMI_CONFIG`` / ``PULUMI_CONFIG_SECRET_KEYS``; exit code 32 from it means the error is
  already on the engine's diagnostics (the engine is told to stop without a second message);
* ``RunPlugin``: a policy pack (``kind=analyzer``) as ``<python> -u -m pulumi.policy ARGS PACK_FOLDER`` in the pack
  folder, any other plugin as ``<python> -u FOLDER ARGS``; stdout and stderr stream back to the engine (it reads the
  plugin's port from them), then the exit code; the process stops when the engine drops the stream;
* ``InstallDependencies``: installs nothing; checks the virtualenv exists and has the Pulumi SDK, else fails
  saying how to create it;
* ``About``, ``GetProgramDependencies`` (the virtualenv's distributions), ``RuntimeOptionsPrompts`` (none),
  ``Cancel`` (interrupts a running program).

Where it differs from upstream's host: only the ``pip`` toolchain with a ``virtualenv`` option (or, without the
option, the ``python3`` on ``PATH`` for a program, as upstream); no ``typechecker``, no debugger attach, no
``Pack``/``Link``/code generation (the CLI's ``package``/``convert`` commands); a policy pack gets no stack
configuration in its environment (upstream proxies the engine's ``ConfigureStack`` to pass the stack name and
config; gpu-platform's pack reads neither); packages with a parameterization are reported by their base plugin only.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Iterator, Optional

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

LANGUAGE_HOST_NAME = "pulumi-language-python"
"""The executable the CLI looks for on PATH for a project or policy pack whose runtime is ``python``."""
RUN_PROGRAM = Path(__file__).with_name("run_program.py")
EXIT_REPORTED = 32
"""run_program.py's exit code for a program error already sent to the engine."""
STOP_GRACE_SECONDS = 5.0
"""How long a program or plugin has after an interrupt before it is killed."""
LIST_TIMEOUT_SECONDS = 60.0
"""Bound on the short Python runs that list a virtualenv's packages."""

_PLUGIN_JSONS = r"""
import importlib.metadata as md, json
found = []
for dist in md.distributions():
    for f in dist.files or ():
        if f.name == "pulumi-plugin.json" and len(f.parts) == 2:
            try:
                found.append({"dist": dist.metadata["Name"], "version": dist.version,
                              "plugin": json.loads(f.read_text())})
            except (OSError, ValueError):
                pass
print(json.dumps(found))
"""
_DISTRIBUTIONS = r"""
import importlib.metadata as md, json
print(json.dumps(sorted({(d.metadata["Name"], d.version) for d in md.distributions() if d.metadata["Name"]})))
"""


class HostError(Exception):
    """A request the host cannot serve; the message goes back to the engine as the call's error."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("gpu-platform")
    except Exception:  # noqa: BLE001 - run from a checkout without an install
        return "0.0.0"


# ------------------------------------------------------------------------------------------------ the Python
def _options(info: language_pb2.ProgramInfo) -> dict:
    return json_format.MessageToDict(info.options) if info.HasField("options") else {}


def python_for(info: language_pb2.ProgramInfo, *, plugin: bool) -> Path:
    """The Python that runs the program or plugin of ``info``: ``<virtualenv>/bin/python`` with the ``virtualenv``
    runtime option resolved against the root directory (a plugin other than a policy pack defaults to ``venv``,
    as upstream), else the ``python3`` on PATH."""
    options = _options(info)
    toolchain = options.get("toolchain", "pip")
    if toolchain != "pip":
        raise HostError(f"runtime option toolchain: {toolchain!r} is not supported by gpu-platform's Python language "
                        "host (pip with a virtualenv only)")
    if options.get("typechecker"):
        raise HostError("runtime option typechecker is not supported by gpu-platform's Python language host")
    virtualenv = options.get("virtualenv") or ("venv" if plugin else None)
    if not virtualenv:
        found = shutil.which("python3") or shutil.which("python")
        if not found:
            raise HostError("no virtualenv option in the runtime options and no python3 on PATH")
        return Path(found)
    root = Path(info.root_directory or info.program_directory or ".")
    venv = Path(virtualenv) if os.path.isabs(virtualenv) else root / virtualenv
    python = venv / "bin" / "python"
    if not python.exists():
        raise HostError(f"the virtualenv {venv} (runtime option virtualenv: {virtualenv}) does not exist: create it "
                        f"with `python3 -m venv {venv}` and install the requirements into it")
    return python


def _venv_env(python: Path, base: dict) -> dict:
    """``base`` with the virtualenv of ``python`` activated (``VIRTUAL_ENV``, its bin first on PATH)."""
    env = dict(base)
    bin_dir = python.parent
    if (bin_dir.parent / "pyvenv.cfg").exists():
        env["VIRTUAL_ENV"] = str(bin_dir.parent)
        env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env.pop("PYTHONHOME", None)
    return env


def _run_python(python: Path, script: str):
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                          timeout=LIST_TIMEOUT_SECONDS, env=_venv_env(python, os.environ), stdin=subprocess.DEVNULL)
    if done.returncode:
        raise HostError(f"{python} could not list its packages: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout)


def required_plugins(python: Path) -> list[dict]:
    """``{"name", "version", "server"}`` of every resource plugin the packages of ``python``'s environment declare."""
    plugins = []
    for entry in _run_python(python, _PLUGIN_JSONS):
        declared = entry["plugin"]
        if not declared.get("resource"):
            continue
        name = declared.get("name") or entry["dist"].lower().removeprefix("pulumi_").removeprefix("pulumi-")
        plugins.append({"name": name, "version": str(declared.get("version") or entry["version"]),
                        "server": declared.get("server") or ""})
    return sorted(plugins, key=lambda p: p["name"])


# ------------------------------------------------------------------------------------------------ processes
def stop_process(process: subprocess.Popen, grace: float = STOP_GRACE_SECONDS) -> None:
    """Interrupt ``process``, then kill it if it has not exited within ``grace`` seconds."""
    if process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace)
    except ProcessLookupError:
        pass


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    """The ``pulumirpc.LanguageRuntime`` service for Python."""

    def __init__(self, engine_address: str = "") -> None:
        self.engine_address = engine_address
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    # -------------------------------------------------------------------------------------------- helpers
    def _track(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._running.add(process)

    def _untrack(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(process)

    def stop_all(self) -> None:
        with self._lock:
            running = list(self._running)
        for process in running:
            stop_process(process)

    @staticmethod
    def _fail(context, exc: Exception):
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))

    # -------------------------------------------------------------------------------------------- handshake
    def Handshake(self, request, context):
        self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request, context):
        return plugin_pb2.PluginInfo(version=_version())

    # -------------------------------------------------------------------------------------------- plugins
    def _required(self, request, context):
        """The program's resource plugins; a failure aborts the call with its message (``context.abort`` raises)."""
        try:
            return required_plugins(python_for(request.info, plugin=False))
        except (HostError, subprocess.TimeoutExpired, ValueError) as exc:
            return self._fail(context, exc)

    def GetRequiredPackages(self, request, context):
        plugins = self._required(request, context) or []
        return language_pb2.GetRequiredPackagesResponse(packages=[
            plugin_pb2.PackageDependency(kind="resource", **p) for p in plugins])

    def GetRequiredPlugins(self, request, context):
        plugins = self._required(request, context) or []
        return language_pb2.GetRequiredPluginsResponse(plugins=[
            plugin_pb2.PluginDependency(kind="resource", **p) for p in plugins])

    # -------------------------------------------------------------------------------------------- programs
    def run_arguments(self, request) -> list[str]:
        """run_program.py's command line for ``request`` (after the Python and the script)."""
        info = request.info
        args = []
        for flag, value in (("monitor", request.monitor_address), ("engine", self.engine_address),
                            ("project", request.project), ("stack", request.stack),
                            ("organization", request.organization), ("root_directory", info.root_directory),
                            ("pwd", request.pwd), ("dry_run", "true" if request.dryRun else "false"),
                            ("parallel", str(request.parallel))):
            if value:
                args += [f"--{flag}", value]
        program_dir = info.program_directory or request.pwd or "."
        entry = info.entry_point or request.program or "."
        args.append(os.path.normpath(os.path.join(program_dir, entry)))
        return args + list(request.args)

    def Run(self, request, context):
        try:
            python = python_for(request.info, plugin=False)
        except HostError as exc:
            return language_pb2.RunResponse(error=str(exc))
        env = _venv_env(python, os.environ)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        try:
            # stdout and stderr are the host's: the engine shows what the program prints
            process = subprocess.Popen([str(python), str(RUN_PROGRAM), *self.run_arguments(request)],
                                       env=env, stdin=subprocess.DEVNULL)
        except OSError as exc:
            return language_pb2.RunResponse(error=f"could not start the program with {python}: {exc}")
        self._track(process)
        context.add_callback(lambda: stop_process(process))
        try:
            code = process.wait()
        finally:
            self._untrack(process)
        if code == 0:
            return language_pb2.RunResponse()
        if code == EXIT_REPORTED:
            return language_pb2.RunResponse(bail=True)
        if code < 0:
            return language_pb2.RunResponse(error=f"the program was stopped by signal {-code}")
        return language_pb2.RunResponse(error=f"the program exited with code {code}")

    def Cancel(self, request, context):
        self.stop_all()
        return empty_pb2.Empty()

    # -------------------------------------------------------------------------------------------- plugins run
    def plugin_command(self, request) -> tuple[list[str], str, dict]:
        """(argv, working directory, environment) of the plugin ``request`` asks to run."""
        info = request.info
        analyzer = request.kind == "analyzer"
        python = python_for(info, plugin=not analyzer)
        folder = info.program_directory or info.root_directory
        base = dict(entry.split("=", 1) for entry in request.env if "=" in entry) if request.env else dict(os.environ)
        env = _venv_env(python, base)
        if analyzer:
            # pulumi.policy takes the engine address and the pack folder, whose __main__.py serves the pack
            return [str(python), "-u", "-m", "pulumi.policy", *request.args, folder], folder, env
        if not os.path.isfile(os.path.join(folder, "__main__.py")):
            raise HostError(f"the plugin folder {folder} has no __main__.py (gpu-platform's Python language host "
                            "runs a plugin folder's __main__.py only)")
        return [str(python), "-u", folder, *request.args], request.pwd or folder, env

    def RunPlugin(self, request, context) -> Iterator[language_pb2.RunPluginResponse]:
        try:
            argv, cwd, env = self.plugin_command(request)
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except (HostError, OSError) as exc:
            return self._fail(context, exc)
        self._track(process)
        # the engine ends a plugin by dropping this stream
        context.add_callback(lambda: stop_process(process))
        chunks: queue.Queue = queue.Queue()

        def pump(stream, name: str) -> None:
            while True:
                chunk = stream.read1(65536)
                if not chunk:
                    break
                chunks.put((name, chunk))
            chunks.put((name, None))

        for stream, name in ((process.stdout, "stdout"), (process.stderr, "stderr")):
            threading.Thread(target=pump, args=(stream, name), daemon=True).start()
        try:
            open_streams = 2
            while open_streams:
                try:
                    name, chunk = chunks.get(timeout=1.0)
                except queue.Empty:
                    if not context.is_active():
                        stop_process(process)
                    continue
                if chunk is None:
                    open_streams -= 1
                else:
                    yield language_pb2.RunPluginResponse(**{name: chunk})
            code = process.wait(timeout=STOP_GRACE_SECONDS * 2)
            yield language_pb2.RunPluginResponse(exitcode=code)
        finally:
            stop_process(process)
            self._untrack(process)

    # -------------------------------------------------------------------------------------------- environment
    def InstallDependencies(self, request, context):
        try:
            python = python_for(request.info, plugin=request.is_plugin)
            done = subprocess.run([str(python), "-c", "import importlib.metadata, pulumi; print(importlib.metadata.version('pulumi'))"],
                                  capture_output=True, text=True, timeout=LIST_TIMEOUT_SECONDS,
                                  env=_venv_env(python, os.environ), stdin=subprocess.DEVNULL)
        except (HostError, subprocess.TimeoutExpired, OSError) as exc:
            return self._fail(context, exc)
        if done.returncode:
            return self._fail(context, HostError(
                f"{python} cannot import the Pulumi SDK: install the requirements into its virtualenv "
                "(gpu-platform's Python language host installs nothing)"))
        yield language_pb2.InstallDependenciesResponse(
            stdout=f"Nothing to install: {python} has the Pulumi SDK {done.stdout.strip()}\n".encode())

    def About(self, request, context):
        try:
            python = python_for(request.info, plugin=False) if request.HasField("info") else Path(sys.executable)
            found = _run_python(python, "import json, platform, sys; "
                                        "print(json.dumps([sys.executable, platform.python_version()]))")
        except (HostError, subprocess.TimeoutExpired, ValueError) as exc:
            return self._fail(context, exc)
        return language_pb2.AboutResponse(executable=found[0], version=found[1],
                                          metadata={"toolchain": "pip", "host": "gpu-platform"})

    def GetProgramDependencies(self, request, context):
        try:
            dists = _run_python(python_for(request.info, plugin=False), _DISTRIBUTIONS)
        except (HostError, subprocess.TimeoutExpired, ValueError) as exc:
            return self._fail(context, exc)
        return language_pb2.GetProgramDependenciesResponse(dependencies=[
            language_pb2.DependencyInfo(name=name, version=version) for name, version in dists])

    def RuntimeOptionsPrompts(self, request, context):
        return language_pb2.RuntimeOptionsResponse()


# ------------------------------------------------------------------------------------------------ server
def serve(engine_address: str = "", *, port: int = 0) -> tuple[grpc.Server, LanguageHost, int]:
    """A started server on loopback: (server, host, port)."""
    host = LanguageHost(engine_address)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16),
                         options=[("grpc.max_receive_message_length", 400 * 1024 * 1024),
                                  ("grpc.max_send_message_length", 400 * 1024 * 1024)])
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    if not bound:
        raise HostError(f"could not listen on 127.0.0.1:{port}")
    server.start()
    return server, host, bound


def parse_args(argv: list[str]) -> argparse.Namespace:
    # the engine may put its own logging and tracing flags before the engine address
    parser = argparse.ArgumentParser(prog=LANGUAGE_HOST_NAME,
                                     description="gpu-platform's Pulumi language host for Python")
    parser.add_argument("--tracing", "-tracing")
    parser.add_argument("--logtostderr", "-logtostderr", action="store_true")
    parser.add_argument("--logflow", "-logflow", action="store_true")
    parser.add_argument("-v", "--v", dest="verbose", type=int, default=0)
    parser.add_argument("--version", "-version", action="store_true")
    parser.add_argument("engine_address", nargs="?", default="")
    args, _unknown = parser.parse_known_args(argv)
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.version:
        print(_version())
        return 0
    server, host, port = serve(args.engine_address)
    stopping = threading.Event()

    def stop(*_):
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # the port on its own line is how the engine learns where to dial
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    parent = os.getppid()
    while not stopping.is_set():
        if os.getppid() != parent:
            # the CLI that started us is gone: nobody will call again
            break
        time.sleep(0.5)
    host.stop_all()
    server.stop(grace=1).wait(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
