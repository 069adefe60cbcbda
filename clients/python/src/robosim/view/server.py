"""The viewer's web server: aiohttp on 127.0.0.1, the page (static/), and a WebSocket (/ws) on
which every page gets JSON messages:

    {"type": "status", "connected": bool, "source": str}   the robosim server reachable or not
    {"type": "reset"}                                       forget every world (a new server)
    {"type": "world", "id": N, "spec": {...}, "workspaces": {entity: [x0, y0, ...]}}
    {"type": "frame", "world": N, "seq": N, "time": s, "step": N, "entities": {...},
     "events": [...], "reward": r | null}

A thread follows the source (the live stream through robosim.Observer with history, or an MCAP
recording played at its pace) and the loop fans the messages out; each world's last
FRAMES_KEPT frames are kept for pages that connect later. The page sends nothing that reaches
the robosim server.

Only this machine's pages are served: every request's Host must be localhost, 127.0.0.1 or
[::1] with the view's port (a site that points its own name at 127.0.0.1, DNS rebinding, is
refused), and a WebSocket's Origin, when the browser sends one, must be such a page's (another
site's page open in the same browser gets nothing). allow_origins adds origins (and their host
and port as a Host), e.g. for a reverse proxy. At most max_pages WebSockets are open at once."""
import asyncio
import collections
import json
import os
import threading
import time
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web

from . import MAX_PAGES  # WebSockets open at once by default: each holds a queue of the history
from .messages import frame_message, world_message

FRAMES_KEPT = 5000  # per world, for pages that connect later
PAGE_QUEUE = 50000  # messages waiting for one page at most: a page further behind is closed
                    # (it reconnects and starts from the kept frames)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


class Hub:
    """The messages so far (worlds, each world's recent frames) and the pages to send to."""

    def __init__(self, loop):
        self.loop = loop
        self.pages = {}  # WebSocket -> its queue of texts (one sender each keeps the order)
        self.worlds = {}  # id -> world message
        self.frames = {}  # id -> deque of frame messages
        self.status = {"type": "status", "connected": False, "source": ""}

    def post(self, msg):
        """From the follower thread: hand a message to the loop."""
        self.loop.call_soon_threadsafe(self._publish, msg)

    def _publish(self, msg):
        kind = msg["type"]
        if kind == "reset":
            self.worlds.clear()
            self.frames.clear()
        elif kind == "status":
            self.status = msg
        elif kind == "world":
            self.worlds[msg["id"]] = msg
            self.frames[msg["id"]] = collections.deque(maxlen=FRAMES_KEPT)
        elif kind == "frame":
            self.frames.setdefault(msg["world"], collections.deque(maxlen=FRAMES_KEPT)).append(msg)
        text = json.dumps(msg)
        for ws, queue in list(self.pages.items()):
            try:
                queue.put_nowait(text)
            except asyncio.QueueFull:
                self.pages.pop(ws, None)
                asyncio.ensure_future(ws.close())

    async def serve_page(self, ws):
        """A new page: everything so far, then what comes, in order, until it goes."""
        queue = asyncio.Queue(PAGE_QUEUE)
        queue.put_nowait(json.dumps(self.status))
        for wid, w in list(self.worlds.items()):
            queue.put_nowait(json.dumps(w))
            batch = list(self.frames.get(wid, ()))
            if batch:
                queue.put_nowait(json.dumps({"type": "frames", "frames": batch}))
        self.pages[ws] = queue
        try:
            while not ws.closed:
                await ws.send_str(await queue.get())
        except (ConnectionError, RuntimeError):
            pass
        finally:
            self.pages.pop(ws, None)


def follow_live(hub, endpoint, stop):
    """The follower thread for a live server: every world's frames from the start of its
    history; on silence, check the server answers; if not, say so and start over when it does
    (a restarted server's worlds begin afresh)."""
    from ..client import Client
    from ..errors import RobosimError
    from ..observer import Observer
    first = True
    while not stop.is_set():
        try:
            with Client(endpoint, timeout=2.0) as c:
                if not first:
                    hub.post({"type": "reset"})
                first = False
                obs = Observer(endpoint, world_id=None, timeout=2.0, history=True)
                hub.post({"type": "status", "connected": True, "source": endpoint})
                known = set()
                try:
                    while not stop.is_set():
                        try:
                            frame, _ = obs.next_frame(timeout=1.0)
                        except RobosimError as exc:
                            if exc.code_name != "TIMEOUT":
                                raise
                            c.hello()  # silence: is the server still there?
                            continue
                        if frame.world_id not in known:
                            known.add(frame.world_id)
                            try:
                                hub.post(world_message(c, frame.world_id))
                            except RobosimError as exc:
                                if exc.code_name != "NOT_FOUND":
                                    raise
                                continue  # destroyed since: nothing to draw it with
                        hub.post(frame_message(frame))
                finally:
                    obs.close()
        except RobosimError:
            hub.post({"type": "status", "connected": False, "source": endpoint})
            stop.wait(1.0)


def follow_recording(hub, path, stop, speed=1.0):
    """The follower thread for a recording: its frames at their recorded pace (x speed)."""
    from ..record import read, read_worlds
    hub.post({"type": "status", "connected": True, "source": path})
    for w in read_worlds(path):
        hub.post(w)
    t0 = w0 = None
    for _, _, frame, _ in read(path):
        if stop.is_set():
            return
        if frame.wall_time:
            if t0 is None:
                t0, w0 = time.monotonic(), frame.wall_time
            delay = (frame.wall_time - w0) / speed - (time.monotonic() - t0)
            if delay > 0:
                stop.wait(min(delay, 5.0))
        hub.post(frame_message(frame))


async def _index(request):
    return web.FileResponse(os.path.join(STATIC, "index.html"))


def _origin_key(origin):
    """An origin as "scheme://host:port" in lowercase (the default port written out), or None."""
    try:
        u = urlsplit(origin.strip().lower())
        port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname or port is None:
        return None
    host = "[%s]" % u.hostname if ":" in u.hostname else u.hostname
    return "%s://%s:%d" % (u.scheme, host, port)


def _host_key(host):
    """A Host header as "host:port" in lowercase (port 80 when it names none), or None."""
    if not host or any(c in host for c in "@/\\?# "):
        return None
    key = _origin_key("http://" + host)
    return key[len("http://"):] if key else None


def _deny(status, text):
    return web.Response(status=status, text="robosim view: " + text + "\n")


@web.middleware
async def _guard(request, handler):
    """Refuse requests for another host name, and WebSockets from another site's pages."""
    app = request.app
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    port = sock[1] if sock else 0
    hosts = {"%s:%d" % (n, port) for n in LOOPBACK_NAMES} | app["allowed_hosts"]
    origins = {"http://%s:%d" % (n, port) for n in LOOPBACK_NAMES} | app["allowed_origins"]
    host = request.headers.get("Host", "")
    if _host_key(host) not in hosts:
        return _deny(403, "Host %r is not this view's: open it as http://127.0.0.1:%d/ (or "
                          "http://localhost:%d/), or start it with --allow-origin for the "
                          "address you use" % (host, port, port))
    origin = request.headers.get("Origin")
    if request.path == "/ws" and origin is not None and _origin_key(origin) not in origins:
        return _deny(403, "pages from %r may not watch: only this view's own page "
                          "(http://127.0.0.1:%d/) may, unless the view is started with "
                          "--allow-origin %s" % (origin, port, origin))
    return await handler(request)


async def _ws(request):
    hub = request.app["hub"]
    limit = request.app["max_pages"]
    if request.app["open_pages"] >= limit:
        return _deny(503, "%d pages already watch, the most this view serves (--max-pages %d); "
                          "close one, or start the view with a larger --max-pages"
                     % (request.app["open_pages"], limit))
    request.app["open_pages"] += 1
    try:
        ws = web.WebSocketResponse(heartbeat=10.0)
        await ws.prepare(request)
        sender = asyncio.ensure_future(hub.serve_page(ws))
        try:
            async for msg in ws:  # read-only: whatever the page says is ignored
                if msg.type == WSMsgType.ERROR:
                    break
        finally:
            sender.cancel()
            hub.pages.pop(ws, None)
        return ws
    finally:
        request.app["open_pages"] -= 1


def make_app(endpoint=None, replay=None, allow_origins=(), max_pages=MAX_PAGES):
    """The aiohttp application following `endpoint` (live) or the recording `replay`, serving
    loopback pages (and those of `allow_origins`), at most `max_pages` at once."""
    allowed = set()
    for o in allow_origins or ():
        key = _origin_key(o)
        if key is None:
            raise ValueError("--allow-origin %r is not an origin: give scheme://host[:port], e.g. "
                             "https://lab.example:8443" % (o,))
        allowed.add(key)
    if int(max_pages) < 1:
        raise ValueError("--max-pages must be at least 1, got %r" % (max_pages,))
    app = web.Application(middlewares=[_guard])
    app["allowed_origins"] = allowed
    app["allowed_hosts"] = {o.split("://", 1)[1] for o in allowed}
    app["max_pages"] = int(max_pages)
    app["open_pages"] = 0
    app.router.add_get("/", _index)
    app.router.add_get("/ws", _ws)
    app.router.add_static("/static/", STATIC)
    stop = threading.Event()

    async def start(app):
        hub = app["hub"] = Hub(asyncio.get_running_loop())
        target, arg = (follow_recording, replay) if replay else (follow_live, endpoint)
        app["thread"] = threading.Thread(target=target, args=(hub, arg, stop), daemon=True)
        app["thread"].start()

    async def cleanup(app):
        stop.set()
        for ws in list(app["hub"].pages):
            await ws.close()

    app.on_startup.append(start)
    app.on_cleanup.append(cleanup)
    return app


def serve(endpoint=None, replay=None, port=8765, allow_origins=(), max_pages=MAX_PAGES):
    """Serve the viewer on http://127.0.0.1:port/ until interrupted (port 0: a free one); see
    make_app for allow_origins and max_pages."""
    import socket
    app = make_app(endpoint, replay, allow_origins, max_pages)  # bad options: before the bind
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(port)))
    sock.listen(128)  # connections wait from now on: the printed address is usable at once
    print("robosim view: http://127.0.0.1:%d/ (%s)" % (sock.getsockname()[1],
                                                        replay or endpoint), flush=True)
    web.run_app(app, sock=sock, print=None, handle_signals=True)
