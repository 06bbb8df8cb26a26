"""Session fixtures shared by the test modules."""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Test modules are imported by their file name (pytest's default import mode, no packages), so a test module can
# import the helpers of another (``from test_scenarios import example_raw``) wherever the two sit in the mirrored
# tree (tests/project/test_layout.py keeps each file name unique): every folder of test modules is on sys.path
# from the start, whichever files a run selects.
_TESTS = Path(__file__).resolve().parent
for _folder in sorted({p.parent for p in _TESTS.rglob("test_*.py")} - {_TESTS}):
    if "fixtures" in _folder.relative_to(_TESTS).parts:
        continue
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from skip_summary import pytest_runtest_logreport  # noqa: F401 - the hook: one -rs line per skip reason
from support import stack_raw, synth

_CACHE: dict[str, list] = {}


@pytest.fixture(scope="session")
def stack_records():
    """stack name -> synthesized records (each stack synthesized once per session)."""
    def get(stack: str):
        if stack not in _CACHE:
            _CACHE[stack] = synth(stack_raw(stack))
        return _CACHE[stack]
    return get


def pytest_terminal_summary(terminalreporter) -> None:
    """Print the ``figures`` a test recorded (``record_property("figures", ...)``), so CI's log shows the measured
    agreement without ``-s``; under xdist the properties travel with the report (the hook lives here: the xdist
    controller loads only this conftest, not those of the test folders)."""
    lines = []
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            for key, value in getattr(report, "user_properties", ()):
                if key == "figures" and report.when == "call":
                    lines.append(f"{report.nodeid.split('::')[-1]} ({outcome}): {value}")
    if lines:
        terminalreporter.section("measured figures")
        for line in lines:
            terminalreporter.write_line(line)


_SWEEP_CACHE = None


def pytest_configure(config) -> None:
    """The sweeps a plan keeps (gpuplatform/simulate/sweep.py ``cached_sweep``) go to a directory of this run, shared
    by its workers (they start after this, with this environment): the suite neither reads a developer's
    ``~/.cache/gpuplatform`` nor writes to it, and takes as long on every machine as on a fresh one."""
    global _SWEEP_CACHE
    if "PYTEST_XDIST_WORKER" not in os.environ and "GPUPLATFORM_CACHE_DIR" not in os.environ:
        _SWEEP_CACHE = tempfile.mkdtemp(prefix="gpuplatform-cache-")
        os.environ["GPUPLATFORM_CACHE_DIR"] = _SWEEP_CACHE


def pytest_unconfigure(config) -> None:
    if _SWEEP_CACHE is not None:
        shutil.rmtree(_SWEEP_CACHE, ignore_errors=True)
