"""A pytest hook for `make test -rs`: one summary line per distinct skip reason."""
import pytest

_FIRST_SKIPPED_AT: dict[str, tuple] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report) -> None:
    """``-rs`` folds skips by location and reason, and a skip raised by a fixture is located at each test that
    asked for it: the 170 render tests without chart packages printed the same ten `helm pull` lines once per
    test file. Every skip of one reason takes the location of the first test skipped for it, so the summary has
    one line per distinct reason with its count (xdist's controller calls this hook with each worker's report)."""
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, lineno, reason = report.longrepr
        report.longrepr = (*_FIRST_SKIPPED_AT.setdefault(reason, (path, lineno)), reason)
