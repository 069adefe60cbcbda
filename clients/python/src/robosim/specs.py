"""The example motion specifications (examples/specs/*.jsonld in the repository), which the wheel
ships as package data in robosim/data/specs/:

    client.load_motion_spec(world_id, path=robosim.example_spec("dual_arm_alignment.jsonld"))
"""
from __future__ import annotations

import os
from typing import Optional

from ._protogen import find_upward

_HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGED = os.path.join(_HERE, "data", "specs")


def _repository_specs() -> Optional[str]:
    """examples/specs/ of the repository this package runs from (a checkout), or None."""
    return find_upward(os.path.join("examples", "specs"), os.path.isdir)


def example_spec_names() -> list[str]:
    """The names of the example specifications there are ("single_arm.jsonld", ...)."""
    names: set[str] = set()
    for d in (PACKAGED, _repository_specs()):
        if d and os.path.isdir(d):
            names.update(n for n in os.listdir(d) if n.endswith(".jsonld"))
    return sorted(names)


def example_spec(name: str) -> str:
    """The path of the example specification `name` ("dual_arm_alignment.jsonld", or
    "examples/specs/dual_arm_alignment.jsonld"): the package's copy (the wheel), else the
    repository's. Raises FileNotFoundError naming the ones there are."""
    base = os.path.basename(name)
    for d in (PACKAGED, _repository_specs()):
        if d:
            path = os.path.join(d, base)
            if os.path.isfile(path):
                return path
    raise FileNotFoundError("no example specification %r (there are: %s)"
                            % (name, ", ".join(example_spec_names()) or "none"))


def resolve_spec_path(path: str) -> str:
    """`path` when it names a file; else, for "examples/specs/<name>" (the repository's path, as
    the README writes it), the example of that name; else `path` unchanged (open() says why)."""
    if os.path.isfile(path):
        return path
    norm = os.path.normpath(path).replace(os.sep, "/")
    if norm.startswith("examples/specs/") and norm.count("/") == 2:
        try:
            return example_spec(norm)
        except FileNotFoundError:
            pass
    return path


TASKS_PACKAGED = os.path.join(_HERE, "data", "tasks")


def builtin_task_names() -> tuple:
    """The server's built-in tasks, in the order its Hello lists them: the documents of the
    task family files (server/core/tasks/*.json of the checkout the package runs from, which
    the server is built from; else the package's copy, robosim/data/tasks/), the files in name
    order, each file's in its order."""
    import json
    for d in (find_upward(os.path.join("server", "core", "tasks"), os.path.isdir), TASKS_PACKAGED):
        if not d or not os.path.isdir(d):
            continue
        names: list = []
        for name in sorted(n for n in os.listdir(d) if n.endswith(".json")):
            with open(os.path.join(d, name)) as f:
                names.extend(doc["name"] for doc in json.load(f))
        if names:
            return tuple(names)
    raise ImportError("robosim: the task family files were not found (robosim/data/tasks/ in "
                      "the package, or server/core/tasks/ of the checkout it runs from)")
