"""robosim fit on a finger run: a recording made with known parameters (restitution 0.3) and
Gaussian measurement noise, fitted from a guess on the wrong side of a bounce, as the command
line does it.

The finger is pushed, let go, pushed again and pulled back: it touches its object, the object
bounces off and slides, stops under friction and is touched again. The recording is written as
an .npz (states (K+1, n), commands (K, m)), then `robosim fit` estimates the restitution with
its intervals; the example prints the command, the report and where the truth lies.

    python -m robosim.examples.fit_finger [--guess 0.7] [--noise 0.002] [--out run.npz]"""
import argparse
import json
import os
import tempfile

import numpy as np

import robosim
from robosim import fit as F

TRUTH = {"finger.kinetic_friction": [0.5], "finger.finger_drag": [1.0],
         "finger.object_drag": [0.3], "finger.restitution": [0.3],
         "finger.object_x0": [0.05], "finger.static_friction": [1.0],
         "finger.resting_speed": [0.05]}
OBSERVED = ["finger.x_f", "finger.v_f", "finger.x_o", "finger.v_o"]


def commands():
    """Push, let go, push again, pull back (150 control steps of 10 ms)."""
    u = np.zeros((150, 1))
    u[:30], u[60:100], u[100:] = 2.0, 1.6, -0.5
    return u


def make_recording(client, path, noise=2e-3, seed=7):
    """Record the run with TRUTH on the server of `client`, add noise, write `path` (.npz)."""
    rec = F.record_run(client, "finger", TRUTH, commands())
    states = rec["states"] + np.random.default_rng(seed).normal(0, noise, rec["states"].shape)
    np.savez(path, states=states, commands=rec["commands"])
    return rec["events"]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m robosim.examples.fit_finger",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--guess", type=float, default=0.7, help="the restitution's starting guess")
    ap.add_argument("--noise", type=float, default=2e-3, help="measurement noise (std dev)")
    ap.add_argument("--out", default=None, help="where to write the .npz (default: a "
                    "temporary file)")
    ap.add_argument("--endpoint", default=None)
    args = ap.parse_args(argv)
    from ..cli import main as cli_main
    from ..client import env_endpoint
    endpoint = args.endpoint or env_endpoint()
    srv = None if endpoint else robosim.LocalServer()
    tmp = None
    try:
        endpoint = endpoint or srv.endpoint
        path = args.out
        if path is None:
            tmp = tempfile.TemporaryDirectory()
            path = os.path.join(tmp.name, "finger_run.npz")
        with robosim.Client(endpoint) as c:
            events = make_recording(c, path, args.noise)
        print("recorded %s: 150 control steps, events %s" % (path, " ".join(events)))
        fixed = {k: v for k, v in TRUTH.items() if k != "finger.restitution"}
        argv = ["fit", path, "--preset", "finger", "--endpoint", endpoint,
                "--param", "finger.restitution=%g,0,1" % args.guess,
                "--fixed", json.dumps(fixed), "--observe", ",".join(OBSERVED)]
        print("robosim " + " ".join(a if " " not in a else "'%s'" % a for a in argv))
        rc = cli_main(argv)
        print("the truth: finger.restitution = %g" % TRUTH["finger.restitution"][0])
        return rc
    finally:
        if tmp is not None:
            tmp.cleanup()
        if srv is not None:
            srv.close()


if __name__ == "__main__":
    raise SystemExit(main())
