"""One Python process stepping many finger worlds on one server through pipelined columnar
StepBatches (Client.send_arrays / recv_arrays: what robosim.vector's async mode runs on), against
the same kind of worlds stepped in-process, in one run, interleaved (every round runs each
figure once, in turn; the figures are medians over the rounds):

  async       --worlds finger worlds (control_dt 10 ms, a new force for every world at every
              step, as bench_core_many_worlds sets it) in --groups groups of consecutive worlds,
              every group in flight: each answer is read (its state rows copied out), the
              group's next forces computed and the group sent again;
  sync        the same worlds, one StepBatch.arrays of all of them per step (Client.step_arrays,
              each answer awaited);
  in-process  build/release/bin/bench_core_many_worlds: finger worlds stepped in turn on one
              core, no network and no protobuf; its figure for as many worlds as --worlds (or
              the largest size it runs below that), and its 1024-world figure beside it, whose
              worlds' memory (6 KB each) fits in this machine's caches as 4,096 worlds' does not.

It prints world-steps per second, the CPU time per world-step of this process and of the server,
and async / (--cores x in-process), --cores being the CPUs this machine has unless told; and,
as a figure a shared machine's load moves less, the in-process CPU time per world-step over
the async one's (this process and the server together): the ratio the async figure reaches
where the cores are free and the server keeps them busy:

    .venv/bin/python bench/python_async.py [--worlds 4096] [--groups 4] [--rounds 5]
        [--seconds 2] [--cores N] [--server-args "--shards 2 --threads 1"]

It starts its own robosim-server (robosim.LocalServer: $ROBOSIM_BIN_DIR, build/release/bin,
PATH) on a free loopback port, with --server-args added."""
import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import time

import numpy as np

import robosim

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def forces(ids: np.ndarray, step: int) -> np.ndarray:
    """bench_core_many_worlds' forces: 0.5 + 0.5 sin(0.1 step + world), one per world."""
    return (0.5 + 0.5 * np.sin(0.1 * step + ids)).reshape(-1, 1)


class Figure:
    """World-steps, wall and CPU seconds (this process, the server) of one timed block."""

    def __init__(self, server_pid: int) -> None:
        self.pid = server_pid
        self.t0, self.c0, self.s0 = time.perf_counter(), time.process_time(), proc_cpu(server_pid)

    def done(self, steps: int) -> dict:
        wall = time.perf_counter() - self.t0
        return {"rate": steps / wall, "client_us": 1e6 * (time.process_time() - self.c0) / steps,
                "server_us": 1e6 * (proc_cpu(self.pid) - self.s0) / steps}


def run_async(c, requests, ids, seconds, pid, state_out):
    """Every group in flight for `seconds`, then the last answers read: the figure."""
    group_of = {}
    step = [0] * len(requests)
    fig = Figure(pid)
    for g, req in enumerate(requests):
        group_of[c.send_arrays(None, commands=forces(ids[g], 0), request=req)] = g
    steps, end = 0, time.perf_counter() + seconds
    while group_of:
        rid, cols = c.recv_arrays()
        g = group_of.pop(rid)
        if cols["errors"]:
            raise next(iter(cols["errors"].values()))
        np.copyto(state_out[g], cols["state"])
        steps += len(ids[g])
        step[g] += 1
        if time.perf_counter() < end:
            group_of[c.send_arrays(None, commands=forces(ids[g], step[g]),
                                   request=requests[g])] = g
    return fig.done(steps)


def run_sync(c, world_ids, all_ids, seconds, pid, state_out):
    fig = Figure(pid)
    steps, step, end = 0, 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        r = c.step_arrays(world_ids, commands=forces(all_ids, step))
        if r["errors"]:
            raise next(iter(r["errors"].values()))
        np.copyto(state_out, r["state"])
        steps += len(world_ids)
        step += 1
    return fig.done(steps)


def run_in_process(binary, seconds, worlds):
    """bench_core_many_worlds' figures, world-steps per second, for `worlds` worlds (its figure at
    that size, or at the largest size it prints below it) and for 1024 worlds, each with its CPU
    time per world-step estimated as the share of its run it spent on a CPU (its CPU over its
    wall time) times its wall time per world-step."""
    c0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    out = subprocess.run([binary, str(seconds)], capture_output=True, text=True,
                         check=True).stdout
    c1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    rates = {int(n): float(r) for n, r in
             re.findall(r"^\s*([0-9]+) worlds:\s+([0-9.]+) world-steps/s", out, re.M)}
    sizes = [n for n in rates if n <= worlds]
    if 1024 not in rates or not sizes:
        raise RuntimeError("bench_core_many_worlds printed no 1024-world figure:\n" + out)
    on_cpu = (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / wall
    same = rates[max(sizes)]
    return {"rate": same, "cpu_us": 1e6 * on_cpu / same, "worlds": max(sizes),
            "rate_1024": rates[1024]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", type=int, default=4096)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--server-args", default="")
    args = ap.parse_args()
    if args.worlds % args.groups:
        ap.error("--groups must divide --worlds")
    core_bench = os.path.join(os.path.dirname(robosim.find_server_binary()),
                              "bench_core_many_worlds")
    if not os.access(core_bench, os.X_OK):
        ap.error("%s not found: scripts/build release bench_core_many_worlds" % core_bench)
    n, b = args.worlds, args.worlds // args.groups
    with robosim.LocalServer(max_worlds=n, args=shlex.split(args.server_args)) as server, \
            robosim.Client(server.endpoint, timeout=120) as c:
        pid = server.proc.pid
        wids = np.array([c.create_world("finger", seed=i) for i in range(n)], dtype=np.uint64)
        all_ids = np.arange(n, dtype=np.float64)
        ids = [all_ids[g * b:(g + 1) * b] for g in range(args.groups)]
        requests = [c.arrays_request(wids[g * b:(g + 1) * b]) for g in range(args.groups)]
        ns = c.step_arrays(wids[:1], commands=forces(all_ids[:1], 0))["state"].shape[1]
        state = np.zeros((n, ns))
        group_state = [state[g * b:(g + 1) * b] for g in range(args.groups)]
        print("%d finger worlds, %d groups of %d in flight; server: %s %s; %d cores; %d rounds "
              "of %g s per figure" % (n, args.groups, b, os.path.basename(server.binary),
                                     args.server_args or "(defaults)", args.cores,
                                     args.rounds, args.seconds))
        run_async(c, requests, ids, 0.3, pid, group_state)  # warm-up
        figs: dict = {"async": [], "sync": [], "in-process": []}
        for _ in range(args.rounds):
            figs["async"].append(run_async(c, requests, ids, args.seconds, pid, group_state))
            figs["sync"].append(run_sync(c, wids, all_ids, args.seconds, pid, state))
            figs["in-process"].append(run_in_process(core_bench, args.seconds / 4, n))
        cpu_ratios = [i["cpu_us"] / (a["client_us"] + a["server_us"])
                      for a, i in zip(figs["async"], figs["in-process"])]
        ratios = [a["rate"] / (args.cores * i["rate"])
                  for a, i in zip(figs["async"], figs["in-process"])]
        ratios_1024 = [a["rate"] / (args.cores * i["rate_1024"])
                       for a, i in zip(figs["async"], figs["in-process"])]
        sync_ratios = [s["rate"] / (args.cores * i["rate"])
                       for s, i in zip(figs["sync"], figs["in-process"])]
    med = statistics.median
    for name, rows in figs.items():
        line = "%-10s %10.0f world-steps/s (median; %0.f-%0.f)" % (
            name, med(r["rate"] for r in rows), min(r["rate"] for r in rows),
            max(r["rate"] for r in rows))
        if "cpu_us" in rows[0]:
            line += "  CPU per world-step (estimated): %.3f us" % med(r["cpu_us"] for r in rows)
        if "client_us" in rows[0]:
            line += "  CPU per world-step: client %.3f us, server %.3f us" % (
                med(r["client_us"] for r in rows), med(r["server_us"] for r in rows))
        print(line)
    same = figs["in-process"][0]["worlds"]
    print("in-process figure: %d worlds stepped in turn (1024 worlds: %.0f world-steps/s)" % (
        same, med(r["rate_1024"] for r in figs["in-process"])))
    print("async / (%d x in-process): %.2f (rounds %s)" % (
        args.cores, med(ratios), ", ".join("%.2f" % r for r in ratios)))
    print("async / (%d x in-process at 1024 worlds, whose worlds fit in the cache): %.2f "
          "(rounds %s)" % (args.cores, med(ratios_1024),
                           ", ".join("%.2f" % r for r in ratios_1024)))
    print("sync  / (%d x in-process): %.2f (rounds %s)" % (
        args.cores, med(sync_ratios), ", ".join("%.2f" % r for r in sync_ratios)))
    print("in-process CPU / async CPU (client + server) per world-step: %.2f (rounds %s)" % (
        med(cpu_ratios), ", ".join("%.2f" % r for r in cpu_ratios)))


if __name__ == "__main__":
    main()
