"""Where auto-started servers write their logs, and which of them are kept at close."""
import os
import re
import tempfile

_KEPT_LOGS: set = set()  # log files an error message named: never removed


def log_dir() -> str:
    """Where auto-started servers write their logs: $ROBOSIM_LOG_DIR, else robosim-logs-UID in
    the temporary folder (one per user; created as needed)."""
    d = os.environ.get("ROBOSIM_LOG_DIR") or os.path.join(
        tempfile.gettempdir(), "robosim-logs-%d" % os.getuid())
    os.makedirs(d, exist_ok=True)
    return d


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def sweep_empty_logs(d: str) -> None:
    """Remove the empty server logs in `d` whose starting process is gone (killed before it
    could remove them); logs with anything in them stay."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"robosim-server-(\d+)-\w+\.log", name)
        if not m or _alive(int(m.group(1))):
            continue
        path = os.path.join(d, name)
        try:
            if os.path.getsize(path) == 0:
                os.remove(path)
        except OSError:
            pass


def keep_log(path: str) -> None:
    """Keep the server log `path` when its LocalServer closes (an error message named it)."""
    _KEPT_LOGS.add(path)


def is_kept(path: str) -> bool:
    """Whether an error named the log `path` (keep_log)."""
    return path in _KEPT_LOGS
