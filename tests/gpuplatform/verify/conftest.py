"""Fixtures of the verify tests: the fake API server (see :mod:`k8s_fixture_server`) and the declared configs."""
from __future__ import annotations

import pytest
from k8s_fixture_server import STACKS, FakeApiServer

from gpuplatform.components.stack_config import load_stack_file


@pytest.fixture
def fake_api():
    """Factory: ``fake_api(stack, variant)`` -> a started server; all are stopped after the test."""
    servers: list[FakeApiServer] = []

    def start(stack: str, variant: str = "healthy") -> FakeApiServer:
        server = FakeApiServer(stack, variant).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def staging_cfg():
    return load_stack_file(STACKS / "Pulumi.staging.yaml")


@pytest.fixture(scope="session")
def prod_cfg():
    return load_stack_file(STACKS / "Pulumi.prod.yaml")
