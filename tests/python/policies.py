"""Policies for the robosim-eval tests."""
import numpy as np


def too_strong(obs):
    return np.array([9.0])  # FingerTouch-v0 takes [-2, 2] N


def broken(obs):
    raise RuntimeError("policy bug")
