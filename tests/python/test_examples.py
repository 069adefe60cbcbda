"""The examples the package ships (robosim.examples): iLQR with the server's Step Jacobians
solves at least as many episodes as the scripted baseline policy on the tasks it claims
(SerialArmReach-v0 and FingerPush-v0, seeds 0-2), and its plans are its own on some of them;
the fit example recovers the restitution it recorded; both run as modules of the installed
package, and bench/ilqr.py still runs them from the repository."""
import os
import subprocess
import sys

import pytest

import robosim
from robosim.examples import fit_finger, ilqr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_examples_are_in_the_package():
    pkg = os.path.dirname(robosim.__file__)
    for mod in (ilqr, fit_finger):
        assert os.path.dirname(os.path.dirname(mod.__file__)) == pkg, mod.__file__


@pytest.mark.parametrize("task", ["arm", "finger"])
def test_ilqr_matches_the_baseline(client, task, capsys):
    rows = ilqr.compare(client, task, seeds=range(3), shooting=False)
    ok_ilqr = sum(r[0] for r in rows["iLQR (step Jacobians)"])
    ok_base = sum(r[0] for r in rows["baseline policy"])
    taken = rows["plans taken from the baseline"]
    print("\n%s: iLQR %d/3, baseline %d/3; %d of %d plans the baseline's"
          % (task, ok_ilqr, ok_base, sum(a for a, _ in taken), sum(b for _, b in taken)))
    assert ok_base >= 1  # the comparison says something
    assert ok_ilqr >= ok_base, rows
    assert sum(a for a, _ in taken) < sum(b for _, b in taken)  # iLQR's own plans are used


def test_fit_example(endpoint, capsys):
    assert fit_finger.main(["--endpoint", endpoint]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("finger.restitution"))
    lo, hi = (float(v) for v in line.split("[")[1].split("]")[0].split(","))
    assert lo <= 0.3 <= hi and hi - lo < 0.05, out


def test_bench_wrapper_runs(endpoint):
    env = dict(os.environ, ROBOSIM_ENDPOINT=endpoint)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ilqr.py"), "1", "--task",
                        "arm", "--no-shooting"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "iLQR (step Jacobians)                1/1" in r.stdout, r.stdout
