"""iLQR with the server's step Jacobians against the baseline policies and random shooting: the
example the package ships, robosim.examples.ilqr (python -m robosim.examples.ilqr), run from the
repository with its arguments.

    python bench/ilqr.py [episodes, default 10] [--horizon 40] [--iters 6] [--task arm|finger]"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                "python", "src"))

from robosim.examples.ilqr import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
