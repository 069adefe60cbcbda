"""Shared fixtures: one local robosim-server (127.0.0.1, free port) for the whole session, found
as robosim.find_server_binary() does ($ROBOSIM_BIN_DIR, build/release/bin, PATH)."""
import pytest

import robosim


@pytest.fixture(scope="session")
def server():
    with robosim.LocalServer() as s:
        yield s


@pytest.fixture(scope="session")
def endpoint(server):
    return server.endpoint


@pytest.fixture
def client(endpoint):
    c = robosim.Client(endpoint, timeout=10.0)
    yield c
    c.close()


@pytest.fixture(scope="session")
def capabilities(endpoint):
    with robosim.Client(endpoint) as c:
        return c.server
