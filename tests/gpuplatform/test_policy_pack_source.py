"""`gpuplatform policy-pack init`: the pack's requirements name gpu-platform by where it really comes from, never by
a bare name a public index could serve to an impostor, and the pack installs in a fresh CI virtualenv from what it
pins, by the steps docs/policies.md shows."""
import json
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from gpuplatform.cli import main
from gpuplatform.policy_pack import PackInitError, installed_version, source_from_direct_url, source_from_index, \
    source_from_option
from support import REPO, clean_env, served_pack, wheelhouse

VERSION = installed_version()
COMMIT = "4f1c2b9e8d7a6c5b4a3928170f6e5d4c3b2a1908"
SHA256 = "9" * 64


def _direct_url(url: str, **info) -> str:
    return json.dumps({"url": url, **info})


def _wheel_file(folder: Path, version: str = VERSION, content: bytes = b"PK\x05\x06" + b"\0" * 18) -> Path:
    path = folder / f"gpu_platform-{version}-py3-none-any.whl"
    path.write_bytes(content)
    return path


def _refusal(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "--source" in message and "--index-url" in message, message
    return message


# ------------------------------------------------------------------------------------------------ what pip recorded
def test_a_git_install_is_pinned_to_the_commit_pip_recorded_not_the_tag_asked_for():
    source = source_from_direct_url(_direct_url("https://git.example.com/ml/gpu-platform.git", vcs_info={
        "vcs": "git", "requested_revision": "v0.4.0", "commit_id": COMMIT}), VERSION)
    req = Requirement(source.requirement)
    assert req.name == "gpu-platform" and req.url == f"git+https://git.example.com/ml/gpu-platform.git@{COMMIT}"
    sub = source_from_direct_url(_direct_url("ssh://git@git.example.com/ml/mono.git", subdirectory="gpu-platform",
                                             vcs_info={"vcs": "git", "commit_id": COMMIT}), VERSION)
    assert Requirement(sub.requirement).url == f"git+ssh://git@git.example.com/ml/mono.git@{COMMIT}" \
                                               f"#subdirectory=gpu-platform"


def test_a_remote_archive_is_pinned_with_the_hash_pip_recorded():
    url = f"https://files.example.com/gpu_platform-{VERSION}-py3-none-any.whl"
    source = source_from_direct_url(_direct_url(url, archive_info={"hash": f"sha256={SHA256}",
                                                                   "hashes": {"sha256": SHA256}}), VERSION)
    assert Requirement(source.requirement).url == f"{url}#sha256={SHA256}" and source.index_url is None
    # an older record with only the legacy field
    legacy = source_from_direct_url(_direct_url(url, archive_info={"hash": f"sha256={SHA256}"}), VERSION)
    assert legacy.requirement == source.requirement
    with pytest.raises(PackInitError) as exc:
        source_from_direct_url(_direct_url(url, archive_info={}), VERSION)
    assert "no hash" in _refusal(exc) and f"--source {url}#sha256=HASH" in str(exc.value)


def test_a_local_wheel_is_copied_into_the_pack_and_named_relative_to_it(tmp_path):
    wheel = _wheel_file(tmp_path)
    digest = __import__("hashlib").sha256(wheel.read_bytes()).hexdigest()
    source = source_from_direct_url(_direct_url(wheel.as_uri(), archive_info={"hashes": {"sha256": digest}}), VERSION)
    assert source.requirement == f"./{wheel.name}" and source.vendored == wheel and source.sha256 == digest
    wheel.write_bytes(b"rebuilt since")
    with pytest.raises(PackInitError) as exc:
        source_from_direct_url(_direct_url(wheel.as_uri(), archive_info={"hashes": {"sha256": digest}}), VERSION)
    assert "changed since" in _refusal(exc)
    wheel.unlink()
    with pytest.raises(PackInitError) as exc:
        source_from_direct_url(_direct_url(wheel.as_uri(), archive_info={}), VERSION)
    assert "does not exist" in _refusal(exc)


@pytest.mark.parametrize("direct_url,says", [
    (None, "installed by name"),
    (_direct_url("file:///home/dev/src/gpu-platform", dir_info={"editable": True}), "/home/dev/src/gpu-platform' "
                                                                                   "(editable)"),
    (_direct_url("file:///home/dev/src/gpu-platform", dir_info={}), "from the directory"),
    (_direct_url("file:///home/dev/src/gpu-platform", vcs_info={"vcs": "git", "commit_id": COMMIT}), "git clone"),
    ("{not json", "unreadable direct_url.json"),
])
def test_what_ci_cannot_reach_or_tell_from_an_impostor_is_refused_naming_the_options(direct_url, says):
    with pytest.raises(PackInitError) as exc:
        source_from_direct_url(direct_url, VERSION)
    assert says in _refusal(exc)


# ------------------------------------------------------------------------------------------------ what the user names
@pytest.mark.parametrize("source,says", [
    (f"git+https://git.example.com/ml/gpu-platform.git@v{VERSION}", "full commit id"),
    ("git+https://git.example.com/ml/gpu-platform.git", "full commit id"),
    (f"git+file:///home/dev/gpu-platform@{COMMIT}", "not a URL CI can reach"),
    (f"https://files.example.com/gpu_platform-{VERSION}-py3-none-any.whl", "needs its hash"),
    (f"https://files.example.com/gpu_platform-{VERSION}-py3-none-any.whl#md5=abc", "needs its hash"),
    (f"https://files.example.com/other_tool-{VERSION}-py3-none-any.whl#sha256={SHA256}", "not a gpu-platform wheel"),
    (f"https://files.example.com/gpu_platform-0.0.1-py3-none-any.whl#sha256={SHA256}", f"but {VERSION} is installed"),
    ("s3://bucket/gpu_platform.whl", "allowed: a wheel or sdist path"),
    ("dist/missing.whl", "does not exist"),
])
def test_a_named_source_that_could_move_or_mismatch_is_refused(source, says):
    with pytest.raises(PackInitError) as exc:
        source_from_option(source, VERSION)
    assert says in str(exc.value)


def test_named_sources_become_url_requirements():
    git = source_from_option(f"git+https://git.example.com/ml/gpu-platform.git@{COMMIT}", VERSION)
    assert Requirement(git.requirement).url == f"git+https://git.example.com/ml/gpu-platform.git@{COMMIT}"
    url = f"https://files.example.com/gpu_platform-{VERSION}-py3-none-any.whl#sha256={SHA256}"
    assert Requirement(source_from_option(url, VERSION).requirement).url == url


def test_an_index_must_be_the_users_own_and_carry_no_literal_credentials():
    source = source_from_index("https://pkgs.example.com/simple", VERSION)
    assert (source.index_url, source.requirement) == ("https://pkgs.example.com/simple", f"gpu-platform=={VERSION}")
    assert source_from_index("https://${INDEX_USER}:${INDEX_TOKEN}@pkgs.example.com/simple", VERSION).index_url
    for url, says in [("https://pypi.org/simple", "not published on pypi.org"),
                      ("http://pkgs.example.com/simple", "https://"),
                      ("https://ci:s3cret@pkgs.example.com/simple", "environment variables")]:
        with pytest.raises(PackInitError) as exc:
            source_from_index(url, VERSION)
        assert says in str(exc.value) and "s3cret" not in str(exc.value)


def test_the_index_pin_reads_every_requirement_from_that_index_only(tmp_path):
    assert main(["policy-pack", "init", str(tmp_path / "pack"), "--index-url", "https://pkgs.example.com/simple"]) == 0
    lines = [line for line in (tmp_path / "pack" / "requirements.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    assert lines[0] == "--index-url https://pkgs.example.com/simple" and f"gpu-platform=={VERSION}" in lines
    assert not any("extra-index-url" in line for line in lines)


# ------------------------------------------------------------------------------------------------ the command
def test_init_in_a_checkout_says_what_to_name_and_writes_nothing(tmp_path, capsys):
    """The tests run gpu-platform from the checkout (an editable install, or the checkout's own egg-info on the
    path, which records no direct URL): nothing CI could use."""
    code = main(["policy-pack", "init", str(tmp_path / "pack")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: gpu-platform ") and "--source" in err and "--index-url" in err
    assert "Traceback" not in err and not (tmp_path / "pack").exists()


def test_init_keeps_a_users_edits_unless_forced_and_drops_the_wheel_it_no_longer_names(tmp_path, capsys):
    pack = tmp_path / "pack"
    first = _wheel_file(tmp_path)
    assert main(["policy-pack", "init", str(pack), "--source", str(first)]) == 0
    assert (pack / first.name).read_bytes() == first.read_bytes()
    (pack / "strict.json").write_text("{}\n")
    assert main(["policy-pack", "init", str(pack), "--source", str(first)]) == 2
    err = capsys.readouterr().err
    assert "strict.json" in err and "--force" in err and "Traceback" not in err
    assert (pack / "strict.json").read_text() == "{}\n"
    rebuilt = tmp_path / "rebuilt"
    rebuilt.mkdir()
    _wheel_file(rebuilt, content=b"PK\x05\x06" + b"\1" * 18)
    assert main(["policy-pack", "init", "--force", str(pack), "--source", str(rebuilt / first.name)]) == 0
    assert json.loads((pack / "strict.json").read_text()) != {}
    assert (pack / first.name).read_bytes() == (rebuilt / first.name).read_bytes()
    assert main(["policy-pack", "init", "--force", str(pack), "--index-url", "https://pkgs.example.com/simple"]) == 0
    assert not list(pack.glob("*.whl")) and "!/" not in (pack / ".gitignore").read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_copied_wheel_is_committed_where_the_repository_ignores_wheels(tmp_path):
    repo = tmp_path / "team-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("*.whl\ndist/\n")
    wheel = _wheel_file(tmp_path)
    assert main(["policy-pack", "init", str(repo / "policy-pack"), "--source", str(wheel)]) == 0
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout
    assert f"?? policy-pack/{wheel.name}" in status.splitlines()
    assert "venv" not in status


# ------------------------------------------------------------------------------------------------ in a fresh CI venv
def _run(cmd, cwd, env=None, timeout=600, shell=False):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, shell=shell,
                          executable="/bin/bash" if shell else None)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _impostor_wheel(folder: Path, version: str) -> Path:
    """What a squatter would upload under the name: a gpuplatform package that says what it is."""
    info = f"gpu_platform-{version}.dist-info"
    files = {"gpuplatform/__init__.py": "IMPOSTOR = True\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: gpu-platform\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: squatter\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    path = folder / f"gpu_platform-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n")
    return path


@pytest.fixture(scope="module")
def release_wheel(tmp_path_factory):
    """The release wheel, built from a copy of the sources (an in-tree build would share build/ with the other
    fresh-venv tests running at the same time)."""
    src = tmp_path_factory.mktemp("release-src")
    shutil.copy(REPO / "pyproject.toml", src)
    shutil.copy(REPO / "README.md", src)
    for folder in ("gpuplatform", "components", "catalogs", "policies"):
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--disable-pip-version-check",
          "--find-links", str(wheelhouse()), "--wheel-dir", str(dist), str(src)], cwd=src)
    [wheel] = dist.glob("gpu_platform-*.whl")
    return wheel


def _doc_steps() -> dict:
    text = (REPO / "docs" / "policies.md").read_text()
    block = re.search(r"<!-- ci-job:[^>]*-->\n```yaml\n(.*?)```", text, re.S).group(1)
    return {s["name"]: s for job in yaml.safe_load(block)["jobs"].values() for s in job["steps"] if "name" in s}


def test_the_pack_installs_in_a_fresh_ci_venv_from_what_it_pins_and_no_impostor_can_take_its_place(
        release_wheel, tmp_path):
    from google.protobuf import empty_pb2, struct_pb2
    from pulumi.runtime.proto import analyzer_pb2

    from gpuplatform.policies.pack import POLICY_DEFS
    from gpuplatform.policies.registry import strict_config

    # the developer writes the pack from the release wheel and commits it; CI checks out the commit elsewhere,
    # where the wheel's original path does not exist
    developer = tmp_path / "developer" / "policy-pack"
    assert main(["policy-pack", "init", str(developer), "--source", str(release_wheel)]) == 0
    checkout = tmp_path / "ci-checkout"
    shutil.copytree(REPO / "examples" / "reuse", checkout, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(developer, checkout / "policy-pack")
    shutil.rmtree(release_wheel.parent)
    shutil.rmtree(developer)
    project = yaml.safe_load((checkout / "policy-pack" / "PulumiPolicy.yaml").read_text())
    assert project["version"] == VERSION and project["runtime"] == {"name": "python", "options": {"virtualenv": "venv"}}
    assert json.loads((checkout / "policy-pack" / "strict.json").read_text()) == strict_config()

    # the only package sources CI sees: the wheelhouse, and a squatter's gpu-platform of this version and a later one
    assert not list(wheelhouse().glob("gpu_platform-*.whl")), "the wheelhouse must hold dependencies only"
    squatter = tmp_path / "public-index"
    squatter.mkdir()
    for version in (VERSION, "99.0.0"):
        _impostor_wheel(squatter, version)
    # the project pins the release the pack pins, with the extra its program needs (a kubeconfig cluster: `stack`)
    (checkout / "requirements.txt").write_text(f"./policy-pack/{release_wheel.name}[stack]\n")
    # `python` and `pip` as setup-python provides them: an environment of their own, first on PATH
    ci_python = tmp_path / "ci-python"
    venv.EnvBuilder(with_pip=True).create(ci_python)
    env = clean_env(ci_python)
    env |= {
        "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": f"{squatter} {wheelhouse()}", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_COMPILE": "1"}
    # by its bare name the release resolves to the squatter's upload: the pin the pack used to write
    bare = json.loads(_run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                            "--ignore-installed", "--report", "-", f"gpu-platform=={VERSION}"],
                           cwd=tmp_path, env=env).stdout)
    assert [i["download_info"]["url"] for i in bare["install"]] == [(squatter / release_wheel.name).as_uri()]

    steps = _doc_steps()
    for name in ("Install the project", "Install the policy pack", "Policies (offline)"):
        step = steps[name]
        _run(step["run"], cwd=checkout / step.get("working-directory", "."), env=env, shell=True)

    python = checkout / "policy-pack" / "venv" / "bin" / "python"
    probe = _run([python, "-c", "import json, gpuplatform\nfrom importlib.metadata import distribution\n"
                  "print(json.dumps([hasattr(gpuplatform, 'IMPOSTOR'), distribution('gpu-platform').version, "
                  "json.loads(distribution('gpu-platform').read_text('direct_url.json'))['url']]))"],
                 cwd=tmp_path, env=env)
    assert json.loads(probe.stdout) == [False, VERSION, (checkout / "policy-pack" / release_wheel.name).as_uri()]
    sarif = json.loads((checkout / "results.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["invocations"][0]["executionSuccessful"] is True

    with served_pack(python, checkout / "policy-pack", env) as stub:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty())
        # the served version is a placeholder: the CLI takes the pack's version from PulumiPolicy.yaml (pulumi-policy
        # policy.py, GetAnalyzerInfo)
        assert info.name == "gpu-platform" and [p.name for p in info.policies] == [p.id for p in POLICY_DEFS]
        props = struct_pb2.Struct()
        props.update({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug"}, "spec": {"containers": [
            {"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}})
        found = stub.Analyze(analyzer_pb2.AnalyzeRequest(
            type="kubernetes:core/v1:Pod", properties=props, urn="urn:pulumi:ci::team::kubernetes:core/v1:Pod::debug",
            name="debug")).diagnostics
        assert [d.policyName for d in found if d.enforcementLevel == analyzer_pb2.EnforcementLevel.Value(
            "MANDATORY")] == ["pod-no-privileged"]

    # the pack's own environment installed gpu-platform from the wheel: init there re-pins the same wheel, now read
    # from what pip recorded (direct_url.json), with no --source
    again = tmp_path / "again"
    _run([checkout / "policy-pack" / "venv" / "bin" / "gpuplatform", "policy-pack", "init", str(again)],
         cwd=tmp_path, env=env)
    assert (again / "requirements.txt").read_text() == (checkout / "policy-pack" / "requirements.txt").read_text()
    assert (again / release_wheel.name).read_bytes() == (checkout / "policy-pack" / release_wheel.name).read_bytes()
