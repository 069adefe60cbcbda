"""Build hook: generate robosim/_pb/robosim_pb2.py (and its .pyi stub) from the repository's
proto/ with the protoc bundled in grpcio-tools (a build requirement, see pyproject.toml). The
generated module is written into the source tree (so editable installs see it too) and never
committed. A regular (not editable) build also copies examples/specs/*.jsonld into the package
(robosim/data/specs/)."""
import os
import re
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src", "robosim"))
import _protogen  # noqa: E402  (the same code regenerates at import time when the proto changed)


class build_py_with_proto(build_py):
    def run(self):
        proto = _protogen.find_proto()
        out = os.path.join(HERE, "src", "robosim", "_pb")
        if proto:
            _protogen.generate(proto, out)
        elif not os.path.exists(os.path.join(out, "robosim_pb2.py")):
            raise SystemExit(
                "robosim: proto/robosim/v1/robosim.proto not found (set ROBOSIM_PROTO_DIR to "
                "the repository's proto/ folder) and no generated robosim_pb2.py present")
        # the task family files (robosim.TASKS) into the package, as the generated module: an
        # editable install and a copy of the package folder carry them too (package data)
        tasks = os.path.join(HERE, "..", "..", "server", "core", "tasks")
        if os.path.isdir(tasks):
            out_tasks = os.path.join(HERE, "src", "robosim", "data", "tasks")
            os.makedirs(out_tasks, exist_ok=True)
            for name in sorted(os.listdir(tasks)):
                if name.endswith(".json"):
                    self.copy_file(os.path.join(tasks, name), os.path.join(out_tasks, name))
        super().run()
        # the example motion specifications as package data (robosim.example_spec), as the
        # wheel's CMake install does; an editable install reads the checkout's own
        specs = os.path.join(HERE, "..", "..", "examples", "specs")
        if os.path.isdir(specs) and not getattr(self, "editable_mode", False):
            out_specs = os.path.join(self.build_lib, "robosim", "data", "specs")
            os.makedirs(out_specs, exist_ok=True)
            for name in sorted(os.listdir(specs)):
                if name.endswith(".jsonld"):
                    self.copy_file(os.path.join(specs, name), os.path.join(out_specs, name))


def cmake_version():
    """The release's version, from the repository's CMakeLists.txt (project() VERSION), the one
    place it is written."""
    with open(os.path.join(HERE, "..", "..", "CMakeLists.txt")) as f:
        return re.search(r"project\(robosim VERSION ([0-9.]+)", f.read()).group(1)


setup(version=cmake_version(), cmdclass={"build_py": build_py_with_proto})
