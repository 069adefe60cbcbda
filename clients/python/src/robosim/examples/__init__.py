"""Worked examples shipped with the package, each runnable as a module:

    python -m robosim.examples.ilqr [episodes] [--task arm|finger|both]   # iLQR with Step Jacobians
    python -m robosim.examples.fit_finger                                 # robosim fit on a finger run

Each starts a local server of this build unless ROBOSIM_ENDPOINT names one."""
