"""Start and stop a local robosim-server process (what the environments do when no endpoint is
given). The binary is found through $ROBOSIM_BIN_DIR, else in the package (the wheel carries it
in robosim/bin/), else build/release/bin of the repository this package sits in, else PATH. The
server binds a free loopback port, publishes its observer stream on another free one (unless the
args choose) and starts without a world (--no-world).

The server ends with the process that started it, however that process dies (SIGKILL
included): it runs with --exit-with-stdin and its stdin is a pipe whose only write end this
process holds, so the kernel closes it when this process goes and the server stops at EOF."""
from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import weakref
from typing import Any, Optional, Sequence

from ._closing import Closing
from ._logs import is_kept, keep_log, log_dir, sweep_empty_logs
from .errors import RobosimError

BINARY = "robosim-server"

_LIVE: "weakref.WeakSet[LocalServer]" = weakref.WeakSet()  # the LocalServers started here


def _after_fork_in_child() -> None:
    """A forked child (multiprocessing, AsyncVectorEnv) drops its copies of the parent's
    servers: it closes its copy of their stdin pipes, so that the servers still end with the
    parent, and it never stops them (stop() acts only in the process that started them)."""
    for server in list(_LIVE):
        p = server.proc
        if p is not None and p.stdin is not None:
            try:
                p.stdin.close()
            except (OSError, ValueError):
                pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def packaged_program(name: str = BINARY) -> Optional[str]:
    """The program `name` the wheel installed beside this module (robosim/bin/), or None (a
    developer install from clients/python has none)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)
    return path if os.access(path, os.X_OK) else None


def packaged_server_binary() -> Optional[str]:
    """The robosim-server the wheel installed beside this module (robosim/bin/), or None."""
    return packaged_program(BINARY)


def _program_on_path(name: str) -> Optional[str]:
    """The first `name` on PATH that is a program, not a script: the package's own console
    scripts (robosim-server, robosim-cli) stand in front of the C programs on PATH in an image
    that installs both, and finding one of them would run it in a loop."""
    for d in os.get_exec_path():
        path = os.path.join(d, name)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        try:
            with open(path, "rb") as f:
                if f.read(2) == b"#!":
                    continue
        except OSError:
            continue
        return path
    return None


def find_program(name: str = BINARY, search_path: bool = True) -> str:
    """Path of one of robosim's C programs (robosim-server, robosim-cli): $ROBOSIM_BIN_DIR, else
    the wheel's robosim/bin/, else build/release/bin of the repository this package sits in,
    else PATH (search_path). Raises RobosimError NOT_FOUND saying where it looked."""
    tried = []
    env = os.environ.get("ROBOSIM_BIN_DIR")
    if env:
        path = os.path.join(env, name)
        if os.access(path, os.X_OK):
            return path
        tried.append(path)
    packaged = packaged_program(name)
    if packaged:
        return packaged
    d = os.path.dirname(os.path.abspath(__file__))
    for _ in range(8):
        path = os.path.join(d, "build", "release", "bin", name)
        if os.access(path, os.X_OK):
            return path
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    tried.append("build/release/bin/%s above %s" % (name, os.path.dirname(__file__)))
    if search_path:
        on_path = _program_on_path(name)
        if on_path:
            return on_path
        tried.append("PATH")
    raise RobosimError.from_name(
        "NOT_FOUND", "cannot find %s (looked in %s); build it with scripts/build release, set "
        "ROBOSIM_BIN_DIR, or pass endpoint= to use a running server" % (name, ", ".join(tried)))


def find_server_binary() -> str:
    """Path of robosim-server, or raise RobosimError NOT_FOUND saying where it looked."""
    return find_program(BINARY)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalServer(Closing):
    """A robosim-server child process on 127.0.0.1. Use as a context manager or call stop(); one
    never closed is closed when collected (its log file too: no ResourceWarning)."""

    def __init__(self, binary: Optional[str] = None, args: Sequence[str] = (),
                 startup_timeout: float = 10.0, log_level: str = "warn",
                 max_worlds: Optional[int] = None) -> None:
        """args: more robosim-server flags. max_worlds: --max-worlds (and --max-batch), for a
        server sized for what it will serve (None: the server's defaults)."""
        self.binary = binary or find_server_binary()
        self._pid = os.getpid()
        # a server for this process alone: all its worlds are one client's (every loopback
        # client is one client to the server's quota anyway)
        sizing = ["--max-worlds-per-client", "0", "--max-worlds-share", "1"]
        if max_worlds is not None and int(max_worlds) > 64:
            n = str(int(max_worlds))
            sizing += ["--max-worlds", n] + (["--max-batch", n] if int(n) > 4096 else [])
        # a named file, so that an error can say where it is: removed at close when empty and
        # no error named it, kept otherwise (log_dir())
        logs = log_dir()
        sweep_empty_logs(logs)
        fd, self.log_path = tempfile.mkstemp(prefix="robosim-server-%d-" % os.getpid(),
                                             suffix=".log", dir=logs)
        self._log = os.fdopen(fd, "w+b")
        last: Optional[RobosimError] = None
        self.proc: Optional[subprocess.Popen] = None
        for _ in range(3):  # a port taken between free_port() and the bind: try another
            self.endpoint = "tcp://127.0.0.1:%d" % free_port()
            # the stream on a free port too, unless args choose (Hello says where it is)
            stream = [] if {"--stream", "--no-stream"} & set(args) else [
                "--stream", "tcp://127.0.0.1:*"]
            cmd = [self.binary, "--bind", self.endpoint, "--no-world", "--exit-with-stdin",
                   "--log-level", log_level, *stream, *sizing, *args]
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=self._log)
            try:
                self._wait_ready(startup_timeout)
                _LIVE.add(self)
                self._release_on_collect(_release, self.proc, self._pid, self._log,
                                         self.log_path)
                return
            except RobosimError as exc:
                last = exc
                self.stop()
        assert last is not None
        _close_log(self._log, self.log_path, self._pid)  # kept: the error names it
        raise last

    def _wait_ready(self, timeout: float) -> None:
        from .client import Client
        deadline = time.monotonic() + timeout
        proc = self.proc
        assert proc is not None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                keep_log(self.log_path)
                raise RobosimError.from_name(
                    "INTERNAL", "%s exited with status %s at start-up (log: %s): %s"
                    % (self.binary, proc.returncode, self.log_path, self.log_tail()))
            try:
                Client(self.endpoint, timeout=0.25).close()
                return
            except RobosimError:
                time.sleep(0.01)  # refused at once while the server starts: do not spin
        keep_log(self.log_path)
        raise RobosimError.from_name("INTERNAL", "%s did not answer on %s within %g s (log: %s): %s"
                                     % (self.binary, self.endpoint, timeout, self.log_path,
                                        self.log_tail()))

    def log_tail(self, n: int = 2000) -> str:
        """The last n characters of the server's log."""
        try:
            self._log.seek(0)
            return self._log.read().decode(errors="replace")[-n:].strip() or "(no output)"
        except (OSError, ValueError):
            return "(no log)"

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, wait, SIGKILL if it hangs. Idempotent."""
        p, self.proc = self.proc, None
        _stop(p, self._pid, timeout)

    def close(self) -> None:
        """Stop the server and close its log (removed when empty and no error named it)."""
        if self._finalizer is not None:
            self.proc = None
            self._release_now()
        else:  # never started: only the log
            self.stop()
            _close_log(self._log, getattr(self, "log_path", None), self._pid)


def _stop(p: Optional[subprocess.Popen], pid: int, timeout: float = 5.0) -> None:
    """Stop the server process p started by process `pid`: SIGTERM, wait, SIGKILL if it
    hangs. Nothing in another process (a forked child's copy is the parent's to stop)."""
    if p is None or os.getpid() != pid:
        return
    if p.stdin is not None:
        try:
            p.stdin.close()
        except OSError:
            pass
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _close_log(log: Any, path: Optional[str], pid: int) -> None:
    """Close a server's log file; remove it when empty and no error named it (is_kept)."""
    try:
        log.close()
    except OSError:
        pass
    if path and os.getpid() == pid and not is_kept(path):
        try:
            if os.path.getsize(path) == 0:
                os.remove(path)
        except OSError:
            pass


def _release(p: Optional[subprocess.Popen], pid: int, log: Any, path: Optional[str]) -> None:
    """What a LocalServer holds, released: by close(), or by weakref.finalize when one is
    collected unclosed or the interpreter exits."""
    _stop(p, pid)
    _close_log(log, path, pid)
