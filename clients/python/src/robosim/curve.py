"""CurveZMQ keys for the clients (Client, Observer).

A server started with --curve-secret-file and --authorized-keys answers only clients that know
its public key and hold a key pair it lists. Give them as keyword arguments or in the
environment:

    server_key        the server's public key: 40 Z85 characters, or the path of a file holding
                      it (its PREFIX.key); default $ROBOSIM_SERVER_KEY
    client_key_file   this client's key pair (PREFIX.key_secret from robosim-cli keygen);
                      default $ROBOSIM_CLIENT_KEY_FILE

None means "from the environment", "" means "none" (plaintext). Key files are ZeroMQ
certificates, read with pyzmq's zmq.auth.load_certificate (the format of CZMQ's zcert too)."""
from typing import Any, Optional
import os

import zmq
import zmq.auth

from .errors import RobosimError

ENV_SERVER_KEY = "ROBOSIM_SERVER_KEY"
ENV_CLIENT_KEY_FILE = "ROBOSIM_CLIENT_KEY_FILE"
KEY_LEN = 40  # Z85 characters of a 32-byte key


def _bad(message):
    return RobosimError.from_name("INVALID_ARGUMENT", message)


def _is_key(text):
    try:
        return len(text) == KEY_LEN and len(zmq.utils.z85.decode(text)) == 32
    except (ValueError, KeyError, IndexError, TypeError):
        return False


def load_keys(path: str, secret: bool = True) -> tuple:
    """(public, secret) Z85 keys as bytes from a key file; secret is None when not asked for.
    RobosimError INVALID_ARGUMENT when the file is missing, holds no (valid) key, or (secret)
    holds no secret key or one that does not belong to its public key."""
    try:
        public, sec = zmq.auth.load_certificate(path)
    except (OSError, ValueError, IndexError) as exc:
        raise _bad("cannot read key file %s: %s (make one with robosim-cli keygen)"
                   % (path, exc)) from None
    if not _is_key(public):
        raise _bad("%s: its public-key is not 40 Z85 characters" % path)
    if not secret:
        return public, None
    if not sec:
        raise _bad("%s holds no secret-key: give the secret key file (PREFIX.key_secret from "
                   "robosim-cli keygen), not the public one" % path)
    if not _is_key(sec) or zmq.curve_public(sec) != public:
        raise _bad("%s: its secret-key does not belong to its public-key" % path)
    return public, sec


def server_public_key(key_or_file: str) -> bytes:
    """The server's public key (bytes) from 40 Z85 characters or a file holding it."""
    text = os.fsdecode(key_or_file)
    if _is_key(text) and not os.path.exists(text):
        return text.encode()
    return load_keys(text, secret=False)[0]


def resolve(server_key: Optional[str] = None,
            client_key_file: Optional[str] = None) -> Optional[tuple]:
    """(server_key, public_key, secret_key) as bytes, or None for plaintext. None arguments
    come from $ROBOSIM_SERVER_KEY / $ROBOSIM_CLIENT_KEY_FILE; both or neither must be set."""
    if server_key is None:
        server_key = os.environ.get(ENV_SERVER_KEY, "")
    if client_key_file is None:
        client_key_file = os.environ.get(ENV_CLIENT_KEY_FILE, "")
    if not server_key and not client_key_file:
        return None
    if not server_key:
        raise _bad("a client key file (%s) needs the server's public key too (server_key= or "
                   "$%s)" % (client_key_file, ENV_SERVER_KEY))
    if not client_key_file:
        raise _bad("the server's public key needs this client's key pair too (client_key_file= "
                   "or $%s: a PREFIX.key_secret from robosim-cli keygen, listed in the server's "
                   "--authorized-keys)" % ENV_CLIENT_KEY_FILE)
    public, secret = load_keys(client_key_file)
    return server_public_key(server_key), public, secret


def apply(sock: Any, keys: Optional[tuple]) -> None:
    """Make `sock` (before its connect) a CURVE client with keys from resolve(); nothing for
    None."""
    if keys is None:
        return
    if not zmq.has("curve"):
        raise RobosimError.from_name("UNIMPLEMENTED", "this pyzmq's libzmq has no CURVE")
    sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = keys
