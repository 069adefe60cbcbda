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
