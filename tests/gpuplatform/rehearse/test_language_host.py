"""gpu-platform's Python language host (gpuplatform/rehearse/language_host.py) over gRPC, as the Pulumi engine
starts and calls it, without the engine: the port on stdout, the plugins a virtualenv declares, a plugin run with
its output streamed back, the errors a missing virtualenv gives. The real CLI drives it in
tests/realengines/gpuplatform/rehearse/test_pulumi_cli.py."""
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc

from gpuplatform.rehearse.language_host import LANGUAGE_HOST_NAME, python_for
from support import REPO

HOST = REPO / "gpuplatform" / "rehearse" / "language_host.py"


@pytest.fixture(scope="module")
def host():
    """The host started as the engine starts it: its engine address as the last argument, its port on stdout."""
    process = subprocess.Popen([sys.executable, str(HOST), "127.0.0.1:1"], stdout=subprocess.PIPE, text=True)
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), port
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield language_pb2_grpc.LanguageRuntimeStub(channel)
        channel.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def _info(root: Path, **options) -> language_pb2.ProgramInfo:
    opts = struct_pb2.Struct()
    opts.update(options)
    return language_pb2.ProgramInfo(root_directory=str(root), program_directory=str(root), entry_point=".",
                                    options=opts)


def test_it_reports_the_resource_plugins_the_virtualenv_declares(host, tmp_path):
    info = _info(tmp_path, toolchain="pip", virtualenv=sys.prefix)
    packages = {p.name: (p.kind, p.version) for p in host.GetRequiredPackages(
        language_pb2.GetRequiredPackagesRequest(info=info)).packages}
    # pulumi_kubernetes' pulumi-plugin.json: the engine then finds the provider on PATH or in its plugin cache
    assert packages["kubernetes"] == ("resource", version("pulumi_kubernetes"))
    assert "policy" not in packages and "pulumi" not in packages


def test_a_missing_virtualenv_is_named_with_how_to_make_it(host, tmp_path):
    info = _info(tmp_path, toolchain="pip", virtualenv="venv")
    with pytest.raises(grpc.RpcError) as err:
        host.GetRequiredPackages(language_pb2.GetRequiredPackagesRequest(info=info))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"the virtualenv {tmp_path / 'venv'} (runtime option virtualenv: venv) does not exist" in err.value.details()
    run = host.Run(language_pb2.RunRequest(info=info, monitor_address="127.0.0.1:1", project="p", stack="s"))
    assert "does not exist" in run.error


def test_an_unsupported_toolchain_is_refused(tmp_path):
    from gpuplatform.rehearse.language_host import HostError

    with pytest.raises(HostError, match="toolchain: 'poetry' is not supported"):
        python_for(_info(tmp_path, toolchain="poetry"), plugin=False)


def test_a_plugin_runs_with_its_output_streamed_and_its_exit_code(host, tmp_path):
    (tmp_path / "__main__.py").write_text(textwrap.dedent("""\
        import os, sys
        print("port-line", sys.argv[1:], flush=True)
        print("to stderr", os.environ.get("FROM_ENGINE"), file=sys.stderr, flush=True)
        sys.exit(3)
    """))
    info = _info(tmp_path, toolchain="pip", virtualenv=sys.prefix)
    replies = list(host.RunPlugin(language_pb2.RunPluginRequest(
        info=info, pwd=str(tmp_path), args=["127.0.0.1:1"], env=["FROM_ENGINE=yes", "PATH=/usr/bin:/bin"],
        kind="resource")))
    stdout = b"".join(r.stdout for r in replies).decode()
    stderr = b"".join(r.stderr for r in replies).decode()
    assert stdout == "port-line ['127.0.0.1:1']\n" and stderr == "to stderr yes\n"
    assert replies[-1].WhichOneof("output") == "exitcode" and replies[-1].exitcode == 3


def test_install_says_there_is_nothing_to_install(host, tmp_path):
    info = _info(tmp_path, toolchain="pip", virtualenv=sys.prefix)
    said = b"".join(r.stdout for r in host.InstallDependencies(language_pb2.InstallDependenciesRequest(info=info)))
    assert said.decode().startswith("Nothing to install: ") and version("pulumi") in said.decode()


def test_it_names_itself(host):
    assert host.GetPluginInfo(empty_pb2.Empty()).version == version("gpu-platform")
    assert LANGUAGE_HOST_NAME == "pulumi-language-python"
