"""Where the engines built by ``make engines`` (engines/build, pinned by engines/versions.env) are."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

CHECKOUT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = CHECKOUT / "engines" / "build"
VERSIONS = CHECKOUT / "engines" / "versions.env"
ENV_DIR = "GPUPLATFORM_ENGINES_BIN"
"""A directory holding every engine's binary (what ``engines/build`` prints last); else the build script finds
the set built for this checkout's versions.env."""


class EnginesMissing(RuntimeError):
    pass


def pinned_versions(path: Path = VERSIONS) -> dict[str, str]:
    versions = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            versions[key] = value
    return versions


def engines_dir() -> Path:
    """The directory of the built engines, or :class:`EnginesMissing` saying how to build them."""
    given: Optional[str] = os.environ.get(ENV_DIR)
    if given:
        path = Path(given)
        if not path.is_dir():
            raise EnginesMissing(f"{ENV_DIR}={given!r} is not a directory")
        return path
    if not BUILD_SCRIPT.exists():
        raise EnginesMissing(f"no engines: set {ENV_DIR} to a directory of the engines' binaries "
                             "(`make engines` in a gpu-platform checkout builds them)")
    done = subprocess.run(["bash", str(BUILD_SCRIPT), "--dir"], capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise EnginesMissing("the engines are not built: run `make engines` (Go and the Go module proxy; the "
                             "first build takes a while, later runs reuse it)\n" + done.stderr.strip())
    return Path(done.stdout.strip().splitlines()[-1])
