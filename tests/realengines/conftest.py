"""The real engines (engines/build, pinned by engines/versions.env) for the tests that run them: a local control
plane per test module. In CI (``CI=true``) a missing engine fails the test; elsewhere it skips with the command
that builds them."""
import os

import pytest

from gpuplatform.rehearse.controlplane import LocalControlPlane
from gpuplatform.rehearse.engines import EnginesMissing, engines_dir


def pytest_collection_modifyitems(items):
    for item in items:
        if "realengines" in str(item.fspath):
            item.add_marker(pytest.mark.realengines)


@pytest.fixture(scope="session")
def engines():
    try:
        return engines_dir()
    except EnginesMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the real engines are missing in CI: {exc}")
        pytest.skip(f"the real engines are not built (`make engines`): {exc}")


@pytest.fixture(scope="module")
def control_plane(engines, tmp_path_factory):
    with LocalControlPlane(engines, tmp_path_factory.mktemp("control-plane")) as cp:
        yield cp
