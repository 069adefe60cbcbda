"""Small helpers shared by the commands."""
import importlib

from .errors import RobosimError


def load_object(spec):
    """'module:attr' (attr may be dotted) -> the object; RobosimError INVALID_ARGUMENT else."""
    if ":" not in spec:
        raise RobosimError.from_name("INVALID_ARGUMENT",
                                     "expected module:callable, got %r" % spec)
    mod_name, attr = spec.split(":", 1)
    try:
        obj = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise RobosimError.from_name("NOT_FOUND", "cannot load %r: %s" % (spec, exc))
    if not callable(obj):
        raise RobosimError.from_name("INVALID_ARGUMENT", "%r is not callable" % spec)
    return obj


def version_text(prog):
    """What `prog --version` prints, as robosim-server and robosim-cli do:
    "robosim 0.1.0 (protocol 1.2)"."""
    from . import __version__
    from .client import PROTOCOL_MAJOR, PROTOCOL_MINOR
    return "%s %s (protocol %d.%d)" % (prog, __version__, PROTOCOL_MAJOR, PROTOCOL_MINOR)


class NoProgress:
    """tqdm's interface, showing nothing (where tqdm is not installed)."""

    def __init__(self, *args, **kwargs):
        self.n = 0

    def update(self, n=1):
        self.n += n

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


DISTRIBUTION = "robosim-gym"  # the name on the package index; the import name is robosim


def package_version() -> str:
    """The release's version: in a checkout, CMakeLists.txt's project() VERSION (the one place
    it is written); else the installed distribution's metadata (the wheel's, read from there at
    build time)."""
    import os
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    cmakelists = os.path.join(here, "..", "..", "..", "..", "CMakeLists.txt")
    try:
        with open(cmakelists) as f:
            m = re.search(r"project\(robosim VERSION ([0-9.]+)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"
