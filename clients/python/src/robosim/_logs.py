"""Where auto-started servers write their logs, and which of them are kept at close."""
import os
import tempfile

_KEPT_LOGS: set = set()  # log files an error message named: never removed


def log_dir() -> str:
    """Where auto-started servers write their logs: $ROBOSIM_LOG_DIR, else robosim-logs-UID in
    the temporary folder (one per user; created as needed)."""
    d = os.environ.get("ROBOSIM_LOG_DIR") or os.path.join(
        tempfile.gettempdir(), "robosim-logs-%d" % os.getuid())
    os.makedirs(d, exist_ok=True)
    return d


def keep_log(path: str) -> None:
    """Keep the server log `path` when its LocalServer closes (an error message named it)."""
    _KEPT_LOGS.add(path)


def is_kept(path: str) -> bool:
    """Whether an error named the log `path` (keep_log)."""
    return path in _KEPT_LOGS
