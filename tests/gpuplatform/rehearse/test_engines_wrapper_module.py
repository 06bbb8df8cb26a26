"""engines/build's wrapper module (``write_wrapper``): what it repeats of the upstream module's go.mod, which Go
applies only in the main module. Run on a go.mod of our own, with the shell function as the script defines it (the
module proxy is not asked: ``upstream_gomod`` is replaced by the file's path)."""
import subprocess
from pathlib import Path

BUILD = Path(__file__).resolve().parents[3] / "engines" / "build"

UPSTREAM = """module example.com/upstream/v2

go 1.26.0

replace example.com/annotations v0.1.0 => example.com/annotations v0.1.1-0.20260629224316-835bd8d49cb4

replace (
	example.com/upstream/api => ./api
	example.com/guard => ./FORBIDDEN_DEPENDENCY
	example.com/forked v1.2.0 => example.com/fork v1.2.1
)

// an unused transitive dependency kept out of the module graph
exclude example.com/chi/v5 v5.2.3

exclude (
	example.com/old v1.0.0
)

require example.com/annotations v0.1.0
"""


def wrapper(tmp_path: Path) -> str:
    gomod = tmp_path / "upstream.mod"
    gomod.write_text(UPSTREAM)
    functions = subprocess.run(["sed", "-n", "/^write_wrapper()/,/^}/p", str(BUILD)], capture_output=True,
                               text=True, check=True).stdout
    assert functions.startswith("write_wrapper()")
    out = tmp_path / "engine-v2.0.0"
    out.mkdir()
    script = f'upstream_gomod() {{ echo "{gomod}"; }}\n{functions}\nwrite_wrapper "{out}" example.com/upstream/v2 v2.0.0 v2.0.0\n'
    subprocess.run(["bash", "-c", script], check=True)
    return (out / "go.mod").read_text()


def test_the_wrapper_repeats_replaces_with_their_versions_and_the_excludes(tmp_path):
    text = wrapper(tmp_path)
    assert "require example.com/upstream/v2 v2.0.0" in text and "go 1.26.0" in text
    # a replacement of one version by a pseudo-version keeps the version it replaces
    assert ("\texample.com/annotations v0.1.0 => example.com/annotations v0.1.1-0.20260629224316-835bd8d49cb4"
            in text.splitlines())
    assert "\texample.com/forked v1.2.0 => example.com/fork v1.2.1" in text.splitlines()
    # a sibling by local path becomes that module at the release; a path that names no module is dropped
    assert "\texample.com/upstream/api => example.com/upstream/api v2.0.0" in text.splitlines()
    assert "FORBIDDEN" not in text and "example.com/guard" not in text
    assert "exclude example.com/chi/v5 v5.2.3" in text.splitlines()
    assert "exclude (" in text and "\texample.com/old v1.0.0" in text.splitlines()
