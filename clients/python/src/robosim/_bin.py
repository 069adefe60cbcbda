"""The console scripts robosim-server and robosim-cli: each replaces itself (exec) with the C
program of that name that the wheel carries in robosim/bin/ (a developer install: the one
robosim.find_server_binary finds, $ROBOSIM_BIN_DIR, the repository's build/release/bin, or a
program of that name further on PATH, as in the eval image), so
signals, stdin and the exit status are the program's own."""
from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional

from .server import find_program


def _exec(name: str, argv: Optional[list[str]] = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    try:
        path = find_program(name)  # PATH: programs only, never this script itself
    except Exception as exc:  # RobosimError NOT_FOUND: say where it looked
        sys.stderr.write("%s: %s\n" % (name, exc))
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [name, *args])


def server_main() -> NoReturn:
    """robosim-server: the simulation server (robosim-server --help)."""
    _exec("robosim-server")


def cli_main() -> NoReturn:
    """robosim-cli: the C command-line client (robosim-cli --help)."""
    _exec("robosim-cli")
