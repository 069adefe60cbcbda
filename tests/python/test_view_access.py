"""Who the browser view serves: requests for another host name (DNS rebinding) and WebSockets
opened by another site's page are refused, this machine's own page is served under each loopback
name, --allow-origin adds an origin, and --max-pages bounds the WebSockets open at once. The
view follows an endpoint nobody serves: what is checked here needs no robosim server."""
import asyncio
import os
import socket
import subprocess
import sys

import aiohttp
import pytest

import robosim


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def start_view():
    procs = []

    def start(*args):
        env = dict(os.environ)
        src = os.path.dirname(os.path.dirname(os.path.abspath(robosim.__file__)))
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        p = subprocess.Popen([sys.executable, "-m", "robosim.cli", "view", "--endpoint",
                              "tcp://127.0.0.1:%d" % _free_port(), "--port", "0", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        procs.append(p)
        line = p.stdout.readline()
        assert "http://127.0.0.1:" in line, line + p.stdout.read()
        return int(line.split()[2].rstrip("/").rsplit(":", 1)[1])

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


async def _get(port, path="/", headers=None):
    async with aiohttp.ClientSession() as s:
        async with s.get("http://127.0.0.1:%d%s" % (port, path), headers=headers or {}) as r:
            return r.status, await r.text()


async def _ws(session, port, origin=None, host=None):
    """A WebSocket to the view: the open socket, or the refusal's (status, text)."""
    headers = {}
    if origin:
        headers["Origin"] = origin
    if host:
        headers["Host"] = host
    try:
        return await session.ws_connect("http://127.0.0.1:%d/ws" % port, headers=headers)
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status, exc.message


def test_view_refuses_other_hosts_and_origins(start_view):
    port = start_view()

    async def go():
        # the page itself under every loopback name
        for host in ("127.0.0.1:%d" % port, "localhost:%d" % port, "[::1]:%d" % port):
            status, _ = await _get(port, headers={"Host": host})
            assert status == 200, host
        # a name of another site pointing at 127.0.0.1 (DNS rebinding), or the wrong port
        for host in ("evil.example:%d" % port, "localhost:%d" % (port + 1), "evil.example"):
            status, text = await _get(port, headers={"Host": host})
            assert status == 403 and "is not this view's" in text and "--allow-origin" in text, \
                (host, status, text)
        async with aiohttp.ClientSession() as s:
            ws = await _ws(s, port, origin="http://127.0.0.1:%d" % port)
            assert not isinstance(ws, tuple), ws
            msg = await ws.receive_json(timeout=5)
            assert msg["type"] == "status"
            await ws.close()
            for origin in ("http://evil.example", "http://localhost:%d" % (port + 1),
                           "https://127.0.0.1:%d" % port, "null"):
                refused = await _ws(s, port, origin=origin)
                assert isinstance(refused, tuple) and refused[0] == 403, (origin, refused)
            # another site's name in Host is refused before any origin check
            refused = await _ws(s, port, origin="http://evil.example:%d" % port,
                                host="evil.example:%d" % port)
            assert isinstance(refused, tuple) and refused[0] == 403
        status, text = await _get(port, "/ws", headers={"Origin": "http://evil.example"})
        assert status == 403 and "may not watch" in text and "--allow-origin" in text, text

    asyncio.run(go())


def test_view_allow_origin(start_view):
    port = start_view("--allow-origin", "https://lab.example:8443")

    async def go():
        async with aiohttp.ClientSession() as s:
            ws = await _ws(s, port, origin="https://lab.example:8443", host="lab.example:8443")
            assert not isinstance(ws, tuple), ws
            await ws.close()
            refused = await _ws(s, port, origin="https://other.example:8443")
            assert isinstance(refused, tuple) and refused[0] == 403

    asyncio.run(go())


def test_view_bounds_pages(start_view):
    port = start_view("--max-pages", "2")

    async def go():
        async with aiohttp.ClientSession() as s:
            origin = "http://127.0.0.1:%d" % port
            a, b = await _ws(s, port, origin), await _ws(s, port, origin)
            assert not isinstance(a, tuple) and not isinstance(b, tuple), (a, b)
            refused = await _ws(s, port, origin)
            assert isinstance(refused, tuple) and refused[0] == 503, refused
            status, text = await _get(port, "/ws", headers={"Origin": origin})
            assert status == 503 and "--max-pages 2" in text, text
            await a.close()
            for _ in range(50):  # the server sees the close: a place is free again
                c = await _ws(s, port, origin)
                if not isinstance(c, tuple):
                    break
                await asyncio.sleep(0.1)
            assert not isinstance(c, tuple), c
            await c.close()
            await b.close()

    asyncio.run(go())


def test_view_default_page_bound(start_view):
    port = start_view()

    async def go():
        async with aiohttp.ClientSession() as s:
            origin = "http://127.0.0.1:%d" % port
            open_ = []
            for _ in range(40):
                ws = await _ws(s, port, origin)
                if isinstance(ws, tuple):
                    break
                open_.append(ws)
            assert len(open_) == 16 and ws[0] == 503, (len(open_), ws)
            for ws in open_:
                await ws.close()

    asyncio.run(go())


def test_view_bad_options_refused():
    env = dict(os.environ)
    src = os.path.dirname(os.path.dirname(os.path.abspath(robosim.__file__)))
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    for bad, want in ((["--max-pages", "0"], "--max-pages must be at least 1"),
                      (["--allow-origin", "lab.example"], "is not an origin")):
        p = subprocess.run([sys.executable, "-m", "robosim.cli", "view", "--port", "0", *bad],
                           capture_output=True, text=True, env=env, timeout=30)
        assert p.returncode == 2 and want in p.stderr, (bad, p.returncode, p.stderr)
