"""The exceptions the package raises.

RobosimError carries the server's error: `code` (the number of robosim.v1.ErrorCode, the
negated C return code), `code_name` ("INVALID_ARGUMENT", ...) and `message` (the server's
explanation). TimeoutError is a RobosimError (and a builtins.TimeoutError) naming the endpoint
that did not answer and how long the client waited."""
import builtins
from typing import Optional

from ._proto import pb

# robosim.v1.ErrorCode: number -> name, read from the generated descriptors
ERROR_CODES = {v.number: v.name for v in pb.ErrorCode.DESCRIPTOR.values}
CODE_BY_NAME = {name: code for code, name in ERROR_CODES.items()}

# codes of failures the client itself detects (no server code applies)
TIMEOUT = -1
PROTOCOL = -2
CLIENT_CODES = {TIMEOUT: "TIMEOUT", PROTOCOL: "PROTOCOL_ERROR"}


class RobosimError(Exception):
    """An error from the server (or the client's own protocol checks).

    Attributes: code (int), code_name (str), message (str), endpoint (str or None)."""

    def __init__(self, code: int, message: str, endpoint: Optional[str] = None) -> None:
        self.code = int(code)
        self.code_name = ERROR_CODES.get(self.code) or CLIENT_CODES.get(self.code, "UNKNOWN")
        self.message = message
        self.endpoint = endpoint
        super().__init__("%s (%d): %s" % (self.code_name, self.code, message))

    @classmethod
    def from_name(cls, name: str, message: str, endpoint: Optional[str] = None) -> "RobosimError":
        return cls(CODE_BY_NAME[name], message, endpoint)


class TimeoutError(RobosimError, builtins.TimeoutError):  # noqa: A001 (robosim.TimeoutError)
    """No answer from `endpoint` within `timeout` seconds."""

    def __init__(self, endpoint: Optional[str], timeout: float, what: str = "request",
                 server_log: Optional[str] = None) -> None:
        self.timeout = timeout
        self.server_log = server_log
        if server_log:
            hint = ("the server was started by this process; its log is kept in %s; a busy "
                    "machine may need a longer timeout (timeout=, $ROBOSIM_TIMEOUT)" % server_log)
        else:
            hint = "is a robosim-server running there?"
        RobosimError.__init__(
            self, TIMEOUT,
            "no answer from %s within %.3g s to a %s (%s)" % (endpoint, timeout, what, hint),
            endpoint)


class ProtocolError(RobosimError):
    """The peer answered with something that is not a robosim.v1 Response."""

    def __init__(self, message: str, endpoint: Optional[str] = None) -> None:
        RobosimError.__init__(self, PROTOCOL, message, endpoint)
