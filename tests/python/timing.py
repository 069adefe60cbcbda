"""Wall-clock bounds that hold on a busy machine (tests/timing.h's, for the Python tests): a
bound is its idle machine's figure times the slowdown measured beside what is timed, in the same
run (docs/testing.md, "On a busy machine")."""
import time


def slowdown(cpu_s=0.02):
    """How many times longer than on an idle machine CPU work takes in wall-clock time now: the
    wall seconds a busy loop of cpu_s CPU seconds on this thread took, over cpu_s, at least 1."""
    w0, c0 = time.monotonic(), time.thread_time()
    c = c0
    while c - c0 < cpu_s:
        sum(range(1000))
        c = time.thread_time()
    return max(1.0, (time.monotonic() - w0) / (c - c0))


def wall_bound(goal, slow):
    """`goal` seconds on an idle machine, stretched by the slowdown `slow` measured beside."""
    return goal * max(1.0, slow)
