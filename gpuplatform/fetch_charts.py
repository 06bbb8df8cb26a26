"""``make charts``: fetch the pinned upstream chart packages (catalogs/versions.py) with ``helm pull`` into a
directory, for the tests that render the releases with the real Helm engine (``GPUPLATFORM_CHARTS_DIR``).

Archives already there are kept. Without helm, or without network, it says which commands to run where there is.
"""
import shutil
import subprocess
import sys
from pathlib import Path

from gpuplatform.catalogs.versions import CHARTS


def pins() -> list[tuple[str, str, str]]:
    """(chart, version, repository) of every pinned version, each once."""
    seen = {}
    for chart in CHARTS.values():
        for v in chart.versions:
            seen.setdefault((chart.name, v.version), chart.repository)
    return [(name, version, repo) for (name, version), repo in seen.items()]


def pull_command(name: str, version: str, repo: str, dest: Path) -> list[str]:
    # an OCI registry is addressed by reference, a classic repository by --repo (helm.sh/docs, "helm pull")
    ref = ["pull", f"{repo}/{name}"] if repo.startswith("oci://") else ["pull", name, "--repo", repo]
    return ["helm", *ref, "--version", version, "--destination", str(dest)]


def main(argv: list[str]) -> int:
    dest = Path(argv[0] if argv else "charts")
    dest.mkdir(parents=True, exist_ok=True)
    wanted = [(n, v, r) for n, v, r in pins() if not (dest / f"{n}-{v}.tgz").exists()]
    print(f"{len(pins()) - len(wanted)} of {len(pins())} pinned chart packages already in {dest}", flush=True)
    if not wanted:
        return 0
    if shutil.which("helm") is None:
        print("helm is not on PATH (https://helm.sh/docs/intro/install/); where it is, run:")
        print("\n".join(" ".join(pull_command(n, v, r, dest)) for n, v, r in wanted))
        return 1
    failed = []
    for name, version, repo in wanted:
        cmd = pull_command(name, version, repo, dest)
        print(" ".join(cmd), flush=True)
        if subprocess.run(cmd, check=False).returncode != 0:
            failed.append(f"{name}-{version}")
    if failed:
        print(f"not fetched (no network, or the repository no longer serves them): {', '.join(failed)}")
        return 1
    print(f"fetched; run the tests with GPUPLATFORM_CHARTS_DIR={dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
