"""Fixtures for the render tests: the chart packages and each configuration rendered once per session.

Without ``GPUPLATFORM_CHARTS_DIR`` the tests skip and say how to fetch the pinned packages with ``helm pull``; with
``CI=true`` they fail instead, so a CI job without the charts cannot pass silently."""
import os

import pytest

import helm_engine
from gpuplatform.catalogs.versions import CHARTS
from rendered import NOT_PUBLIC, RenderedStack, render_stack

_RENDERED: dict[str, RenderedStack] = {}


def pinned_packages() -> list[tuple[str, str, str]]:
    return [(c.name, v.version, c.repository) for c in CHARTS.values() if c.name not in NOT_PUBLIC
            for v in c.versions]


@pytest.fixture(scope="session")
def charts() -> helm_engine.ChartsDir:
    found = helm_engine.charts_dir()
    if found.path is not None:
        return found
    message = (f"{found.reason}: set it to a directory of the pinned chart packages (CI uses ../shared/charts), "
               "or fetch them into one with:\n" + helm_engine.pull_hint(pinned_packages()))
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


RENDER_GROUP = "helm-render"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Every test that reads a rendered configuration runs in one xdist worker (``--dist loadgroup``, pyproject's
    addopts): each configuration is then rendered once per run, not once per worker that happens to get one of
    its tests (rendering is most of these tests' cost). First among the hooks: pytest-xdist reads the groups in its
    own ``pytest_collection_modifyitems`` (xdist/remote.py), registered before this conftest, so called after it
    only when this one asks to go first."""
    for item in items:
        if "rendered" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(RENDER_GROUP))


@pytest.fixture(scope="session")
def rendered(charts):
    """config name -> its releases rendered by the real Helm engine (once per session)."""
    def get(name: str) -> RenderedStack:
        if name not in _RENDERED:
            _RENDERED[name] = render_stack(name, charts)
        return _RENDERED[name]
    return get
