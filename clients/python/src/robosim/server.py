"""Start and stop a local robosim-server process (what the environments do when no endpoint is
given). The binary is found through $ROBOSIM_BIN_DIR, else build/release/bin of the repository
this package sits in, else PATH. The server binds a free loopback port and starts without a
world (--no-world)."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from .errors import RobosimError

BINARY = "robosim-server"


def find_server_binary():
    """Path of robosim-server, or raise RobosimError NOT_FOUND saying where it looked."""
    tried = []
    env = os.environ.get("ROBOSIM_BIN_DIR")
    if env:
        path = os.path.join(env, BINARY)
        if os.access(path, os.X_OK):
            return path
        tried.append(path)
    d = os.path.dirname(os.path.abspath(__file__))
    for _ in range(8):
        path = os.path.join(d, "build", "release", "bin", BINARY)
        if os.access(path, os.X_OK):
            return path
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    tried.append("build/release/bin/%s above %s" % (BINARY, os.path.dirname(__file__)))
    path = shutil.which(BINARY)
    if path:
        return path
    tried.append("PATH")
    raise RobosimError.from_name(
        "NOT_FOUND", "cannot find %s (looked in %s); build it with scripts/build release, set "
        "ROBOSIM_BIN_DIR, or pass endpoint= to use a running server" % (BINARY, ", ".join(tried)))


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalServer:
    """A robosim-server child process on 127.0.0.1. Use as a context manager or call stop()."""

    def __init__(self, binary=None, args=(), startup_timeout=10.0, log_level="warn"):
        self.binary = binary or find_server_binary()
        self.proc = None
        self._log = tempfile.TemporaryFile()
        last = None
        for _ in range(3):  # a port taken between free_port() and the bind: try another
            self.endpoint = "tcp://127.0.0.1:%d" % free_port()
            cmd = [self.binary, "--bind", self.endpoint, "--no-world", "--log-level",
                   log_level, *args]
            if "--stream" not in args and "--no-stream" not in args:
                # the stream on a free port too: the default 5556 may be another server's
                cmd += ["--stream", "tcp://127.0.0.1:*"]
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=self._log)
            try:
                self._wait_ready(startup_timeout)
                return
            except RobosimError as exc:
                last = exc
                self.stop()
        raise last

    def _wait_ready(self, timeout):
        from .client import Client
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RobosimError.from_name(
                    "INTERNAL", "%s exited with status %s at start-up: %s"
                    % (self.binary, self.proc.returncode, self.log_tail()))
            try:
                Client(self.endpoint, timeout=0.25).close()
                return
            except RobosimError:
                continue
        raise RobosimError.from_name("INTERNAL", "%s did not answer on %s within %g s: %s"
                                     % (self.binary, self.endpoint, timeout, self.log_tail()))

    def log_tail(self, n=2000):
        try:
            self._log.seek(0)
            return self._log.read().decode(errors="replace")[-n:].strip() or "(no output)"
        except (OSError, ValueError):
            return "(no log)"

    def stop(self, timeout=5.0):
        """SIGTERM, wait, SIGKILL if it hangs. Idempotent."""
        p, self.proc = self.proc, None
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def close(self):
        self.stop()
        try:
            self._log.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass
