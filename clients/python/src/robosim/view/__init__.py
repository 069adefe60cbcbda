"""robosim view: a live view of the server's worlds in the browser.

    robosim view [--endpoint E] [--port P]       serve http://127.0.0.1:P/ (default 8765)
        [--allow-origin URL ...] [--max-pages N]
    robosim replay run.mcap --view [--port P]    the same page playing a recording

A small aiohttp server on loopback follows the observer stream of every world (from the start
of the server's history, so a page opened late still shows the run), and pushes the frames to
every page over a WebSocket; the page draws each world (the finger and its object with the
contact state, both arms with their targets and workspaces, the differential-drive robot with
its obstacles and trail), the simulated time, the events as marks on a timeline and live plots
of chosen signals. It only reads: no request it makes changes a world. Many pages may watch;
a page reconnects when the view server restarts, and the view server reconnects when the
robosim server restarts (the page then starts afresh). Only pages of this view's own address
(localhost, 127.0.0.1, [::1] at its port) are served, and those of --allow-origin; at most
--max-pages WebSockets are open at once (default 16)."""

import sys

DEFAULT_PORT = 8765
MAX_PAGES = 16  # WebSockets open at once by default (--max-pages)


def cmd_view(args):
    from ..client import DEFAULT_ENDPOINT, env_endpoint
    from .server import serve
    try:
        serve(endpoint=args.endpoint or env_endpoint() or DEFAULT_ENDPOINT, port=args.port,
              allow_origins=args.allow_origin, max_pages=args.max_pages)
    except ValueError as exc:  # an option that cannot be used
        print("robosim view: %s" % exc, file=sys.stderr)
        return 2
    return 0


def add_access_options(p):
    """--allow-origin and --max-pages (view, and replay --view)."""
    p.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                   help="also serve pages of this origin (scheme://host[:port], e.g. behind a "
                        "reverse proxy); repeatable. Default: this machine's loopback names only")
    p.add_argument("--max-pages", type=int, default=MAX_PAGES,
                   help="WebSockets open at once at most (default %d); more are refused"
                        % MAX_PAGES)


def add_parser(sub):
    """The view subcommand (robosim.cli)."""
    v = sub.add_parser("view", help="a live view of the worlds in the browser")
    v.add_argument("--endpoint", help="server request endpoint (default $ROBOSIM_ENDPOINT, "
                                      "else tcp://127.0.0.1:5555)")
    v.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help="HTTP port on 127.0.0.1 (default %d; 0: a free one, printed)"
                   % DEFAULT_PORT)
    add_access_options(v)
    v.set_defaults(fn=cmd_view)
