"""Install a consumer's policy pack as its CI does, and print what it costs: one JSON line
{"checkout", "distributions", "wheels_mb", "heavy", "install_s", "install_cpu_s", "venv_mb"}, then the verdicts.

The pack is the folder `gpuplatform policy-pack init --source WHEEL` writes (its requirements.txt names the release
wheel of the checkout and the pack's runtime pins); the virtualenv is created and installed from it as the
folder's own instructions say (`python3 -m venv venv && venv/bin/pip install -r requirements.txt`), offline, from
the wheelhouse `make install` collects (GPUPLATFORM_WHEELHOUSE, default .venv/wheelhouse): the time is pip's and
the disk's, no download. ``install_s`` is the wall clock of creating the venv and installing, ``install_cpu_s``
the CPU time of those processes (what the verdict reads: a shared machine stretches the wall clock); ``venv_mb`` the
venv's size on disk; ``wheels_mb`` the size of the wheels pip picked; ``heavy`` the distributions installed that
the pack never imports (the Alibaba Cloud provider, the Kubernetes client, the Helm engine, matplotlib).

--checkout DIR measures another tree (e.g. an older release, for the before/after figures of docs/architecture.md).
--resolve-only (the tests' small run) asks pip which wheels it would install (`pip install --dry-run --report`)
and prints those figures without building a venv: no size or time is measured, so no verdict on them is given.

Targets: none of the heavy distributions installed; the venv under 150 MB and the install under 20 s of CPU.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import resource
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from targets import exit_code, verdict

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pulumi-alicloud", "kubernetes", "kubernetes-validate", "helm-python-sdk", "matplotlib", "numpy")
TARGET_MB = 150.0
TARGET_SECONDS = 20.0
SOURCES = ("pyproject.toml", "README.md", "gpuplatform", "components", "catalogs", "policies")


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.stderr.write(f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        raise SystemExit(2)
    return proc


def _wheel(checkout: Path, wheels: Path, work: Path) -> Path:
    """The release wheel, built from a copy of the sources (an in-tree build writes build/ into the checkout)."""
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        path = checkout / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "venv"))
        elif path.is_file():
            shutil.copy(path, src / name)
    dist = work / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--disable-pip-version-check",
          "--find-links", wheels, "--wheel-dir", dist, src], cwd=work)
    [wheel] = dist.glob("gpu_platform-*.whl")
    return wheel


def _pack(wheel: Path, work: Path) -> Path:
    """The pack folder `policy-pack init` writes, gpu-platform pinned to the wheel (copied into the folder)."""
    pack = work / "policy-pack"
    exe = Path(sys.executable).with_name("gpuplatform")
    _run([exe, "policy-pack", "init", pack, "--source", wheel], cwd=work)
    return pack


def _pip_env(wheels: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return env | {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _size_mb(path: Path) -> float:
    total = sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return round(total / 2 ** 20, 1)


def measure(checkout: Path, wheels: Path, resolve_only: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="pack-install-") as tmp:
        work = Path(tmp)
        pack = _pack(_wheel(checkout, wheels, work), work)
        env = _pip_env(wheels)
        report = json.loads(_run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                                  "--report", "-", "-r", "requirements.txt"], cwd=pack, env=env).stdout)
        names = sorted(i["metadata"]["name"].lower().replace("_", "-") for i in report["install"])
        wheels_mb = round(sum(Path(unquote(urlsplit(i["download_info"]["url"]).path)).stat().st_size
                              for i in report["install"]) / 2 ** 20, 1)
        figures = {"checkout": str(checkout), "distributions": len(names), "wheels_mb": wheels_mb,
                   "heavy": [n for n in names if n in HEAVY]}
        if resolve_only:
            return figures | {"install_s": None, "install_cpu_s": None, "venv_mb": None}
        start, children = time.perf_counter(), _children_cpu()
        # as the folder's instructions say: the venv module of the interpreter, then the venv's own pip
        _run([sys.executable, "-m", "venv", pack / "venv"], cwd=pack)
        _run([pack / "venv" / "bin" / "pip", "install", "-q", "-r", "requirements.txt"], cwd=pack, env=env)
        seconds = round(time.perf_counter() - start, 1)
        return figures | {"install_s": seconds, "install_cpu_s": round(_children_cpu() - children, 1),
                          "venv_mb": _size_mb(pack / "venv")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkout", default=str(ROOT), help="the tree whose pack to install (default: this checkout)")
    p.add_argument("--wheelhouse", default=os.environ.get("GPUPLATFORM_WHEELHOUSE", str(ROOT / ".venv" / "wheelhouse")))
    p.add_argument("--resolve-only", action="store_true", help="which wheels, no venv: the tests' small run")
    args = p.parse_args()
    wheels = Path(args.wheelhouse).resolve()
    if not (wheels / ".complete").is_file():
        sys.stderr.write(f"no complete wheelhouse at {wheels}: run `make install` first\n")
        return 2
    figures = measure(Path(args.checkout).resolve(), wheels, args.resolve_only)
    print(json.dumps(figures), flush=True)
    results = [verdict("no heavy distribution in the pack's venv", not figures["heavy"], heavy=figures["heavy"])]
    measured = figures["venv_mb"] is not None
    results.append(verdict(f"venv under {TARGET_MB:.0f} MB", figures["venv_mb"] < TARGET_MB if measured else None,
                           venv_mb=figures["venv_mb"]))
    # judged on CPU time (pip's and the children's): a shared machine stretches the wall clock, printed beside it
    results.append(verdict(f"install under {TARGET_SECONDS:.0f} s of CPU",
                           figures["install_cpu_s"] < TARGET_SECONDS if measured else None,
                           install_cpu_s=figures["install_cpu_s"], install_s=figures["install_s"]))
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
