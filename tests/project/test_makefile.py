"""`make test` finds the chart packages beside the checkout and shows why tests skip; `make charts` fetches the
pinned packages with helm. Make runs with -n (print, do not run), helm is a stand-in: nothing leaves the machine."""
import os
import shutil
import subprocess
import sys

import pytest

from gpuplatform import fetch_charts
from support import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def checkout_beside(tmp_path, charts: bool):
    """A copy of the Makefile in tmp/checkout, with tmp/shared/charts holding a package or not."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(REPO / name, checkout / name)
    if charts:
        (tmp_path / "shared" / "charts").mkdir(parents=True)
        (tmp_path / "shared" / "charts" / "keda-2.20.2.tgz").write_bytes(b"")
    return checkout


def dry_run(checkout, *args) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GPUPLATFORM_CHARTS_DIR"}
    return subprocess.run(["make", "-n", *args], cwd=checkout, env=env, capture_output=True, text=True,
                          check=True).stdout


def test_make_test_reads_the_charts_beside_the_checkout_and_shows_skip_reasons(tmp_path):
    out = dry_run(checkout_beside(tmp_path, charts=True), "test")
    assert f"chart packages: {tmp_path / 'shared' / 'charts'}" in out
    pytest_line = next(line for line in out.splitlines() if "-m pytest" in line)
    assert "-rs" in pytest_line.split() and "-q" not in pytest_line.split()


def test_make_test_without_charts_says_how_to_get_them(tmp_path):
    out = dry_run(checkout_beside(tmp_path, charts=False), "test")
    assert "chart packages: none" in out and "make charts" in out


def test_the_first_run_says_what_it_installs(tmp_path):
    out = dry_run(checkout_beside(tmp_path, charts=False), "test")
    assert "installing .venv with the pinned dependencies (first run" in out
    assert "collecting wheels into .venv/wheelhouse" in out


def fake_helm(tmp_path, fail: str = "") -> dict:
    """A helm that writes the archive `helm pull --destination` would, and fails for one chart."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "helm"
    script.write_text(f"""#!{sys.executable}
import sys, pathlib
args = sys.argv[1:]
ref = args[1].rsplit("/", 1)[-1]
version, dest = args[args.index("--version") + 1], args[args.index("--destination") + 1]
if ref == {fail!r}:
    sys.exit(1)
pathlib.Path(dest, f"{{ref}}-{{version}}.tgz").write_bytes(b"")
""")
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_make_charts_pulls_every_pinned_version(tmp_path, monkeypatch, capsys):
    for key, value in fake_helm(tmp_path).items():
        monkeypatch.setenv(key, value)
    dest = tmp_path / "charts"
    assert fetch_charts.main([str(dest)]) == 0
    assert sorted(p.name for p in dest.glob("*.tgz")) == sorted(f"{n}-{v}.tgz" for n, v, _ in fetch_charts.pins())
    assert fetch_charts.main([str(dest)]) == 0  # a second run keeps what is there
    assert f"{len(fetch_charts.pins())} of {len(fetch_charts.pins())} pinned chart packages already" in \
        capsys.readouterr().out


def test_make_charts_names_what_it_could_not_fetch(tmp_path, monkeypatch, capsys):
    for key, value in fake_helm(tmp_path, fail="keda").items():
        monkeypatch.setenv(key, value)
    assert fetch_charts.main([str(tmp_path / "charts")]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("not fetched") and "keda-2.20.2" in last and "cert-manager" not in last


def test_make_charts_without_helm_prints_the_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no helm anywhere
    assert fetch_charts.main([str(tmp_path / "charts")]) == 1
    out = capsys.readouterr().out
    assert "helm is not on PATH" in out
    assert all(f"--version {v}" in out for _, v, _ in fetch_charts.pins())
