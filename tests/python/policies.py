"""Policies for the robosim-eval tests."""
import numpy as np


def too_strong(obs):
    return np.array([9.0])  # FingerTouch-v0 takes [-2, 2] N


def recorder(obs):
    """Saves the first observation it is given to $ROBOSIM_TEST_SEEN; pushes gently."""
    import os
    path = os.environ["ROBOSIM_TEST_SEEN"]
    if not os.path.exists(path):
        np.save(path, obs)
    return np.array([0.5])


def not_finite(obs):
    return np.array([np.nan])


def broken(obs):
    raise RuntimeError("policy bug")
