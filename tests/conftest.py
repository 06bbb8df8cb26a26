"""Session fixtures shared by the test modules."""
import pytest

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
