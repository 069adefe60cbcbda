"""Shared fixtures: one local robosim-server (127.0.0.1, free port) for the whole session, found
as robosim.find_server_binary() does ($ROBOSIM_BIN_DIR, build/release/bin, PATH)."""
import pytest

import robosim


def pytest_configure(config):
    """Warnings the suite provokes on purpose, each filtered with its reason (any other warning
    is reported)."""
    # The -v0 tasks are tested as they stay registered (deprecated for their -v1); Gymnasium's
    # make says so on every gym.make of one.
    config.addinivalue_line(
        "filterwarnings", r"ignore:.*The environment robosim/\w+-v0 is out of date"
        r":DeprecationWarning")


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
