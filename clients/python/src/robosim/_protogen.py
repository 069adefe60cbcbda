"""Generate the Python message code (robosim_pb2.py and its type stub robosim_pb2.pyi) from
proto/robosim/v1/robosim.proto with the protoc bundled in grpcio-tools, at build time (setup.py,
and the wheel's CMake build). Standard library only: setup.py imports this file directly.

Next to the generated module a stamp records the proto's SHA-256 and the protoc version, so an
editable install in a checkout can tell at import time that the proto changed (new fields) and
regenerate in place (robosim/_proto.py); an installed package never generates anything."""
import hashlib
import os
import shutil
import tempfile

PROTO_REL = os.path.join("robosim", "v1", "robosim.proto")
MODULE = "robosim_pb2.py"
STUB = "robosim_pb2.pyi"
STAMP = "robosim_pb2.stamp"


def find_proto():
    """The path of robosim.proto: $ROBOSIM_PROTO_DIR/robosim/v1/robosim.proto, else the first
    proto/robosim/v1/robosim.proto in a parent folder of this file (a repository checkout);
    None when there is none."""
    env = os.environ.get("ROBOSIM_PROTO_DIR")
    if env:
        path = os.path.join(env, PROTO_REL)
        return path if os.path.isfile(path) else None
    return find_upward(os.path.join("proto", PROTO_REL), os.path.isfile)


def find_upward(rel, exists):
    """The first path rel below the folder of this file or one of its parents (eight at most) for
    which exists(path) holds: a file or folder of the repository checkout the package runs from;
    None when there is none."""
    d = os.path.dirname(os.path.abspath(__file__))
    for _ in range(8):
        path = os.path.join(d, rel)
        if exists(path):
            return path
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return None


def proto_digest(proto_file):
    with open(proto_file, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_stamp(out_dir):
    """(proto sha256, protoc version) recorded with the generated module, or (None, None)."""
    try:
        with open(os.path.join(out_dir, STAMP)) as f:
            digest, version = (f.read().split() + [None, None])[:2]
            return digest, version
    except OSError:
        return None, None


def is_current(proto_file, out_dir):
    return (os.path.isfile(os.path.join(out_dir, MODULE))
            and read_stamp(out_dir)[0] == proto_digest(proto_file))


def protoc_version():
    """The version of grpc_tools' protoc ("35.1"), or "unknown"."""
    import subprocess
    import sys
    try:
        out = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "--version"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.strip().replace("libprotoc ", "") or "unknown"


def generate(proto_file, out_dir):
    """Run grpc_tools' protoc on proto_file into out_dir/robosim_pb2.py and robosim_pb2.pyi
    (each atomically) and write the stamp. Raises ImportError without grpcio-tools,
    RuntimeError when protoc fails."""
    from grpc_tools import protoc  # noqa: F401  (ImportError says what is missing)
    proto_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(proto_file))))
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main(["protoc", "--proto_path=" + proto_dir, "--python_out=" + tmp,
                          "--pyi_out=" + tmp, os.path.abspath(proto_file)])
        produced = [os.path.join(tmp, "robosim", "v1", name) for name in (STUB, MODULE)]
        if rc != 0 or not all(os.path.isfile(p) for p in produced):
            raise RuntimeError("protoc failed (exit %s) on %s" % (rc, proto_file))
        for path in produced:  # the module last: a stamp-less module is regenerated
            fd, partial = tempfile.mkstemp(dir=out_dir, suffix=".tmp")
            os.close(fd)
            shutil.copyfile(path, partial)
            os.replace(partial, os.path.join(out_dir, os.path.basename(path)))
    init = os.path.join(out_dir, "__init__.py")
    if not os.path.exists(init):
        with open(init, "w") as f:
            f.write('"""Generated protocol code (robosim_pb2.py and .pyi, not committed)."""\n')
    with open(os.path.join(out_dir, STAMP), "w") as f:
        f.write("%s %s\n" % (proto_digest(proto_file), protoc_version()))


if __name__ == "__main__":  # python _protogen.py PROTO OUT_DIR: the wheel's build step
    import sys
    generate(sys.argv[1], sys.argv[2])
