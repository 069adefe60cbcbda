"""robosim's vector environments side by side with EnvPool's, in one run, interleaved (every round
runs each configuration once, in turn; the figures are medians over the rounds):

  EnvPool 1.2.5 (optional: pip install -r bench/requirements-envpool.txt): Pendulum-v1 and
      CartPole-v1, env_type="gymnasium", its default thread count;
  robosim: robosim.vector.make("FingerPush-v1") and ("SerialArmReach-v1") on one local
      robosim-server at its defaults;

each at --sizes environments (16, 256, 1024), in two modes:

  sync   env.step(actions) for all of them, each step awaited;
  async  EnvPool's async mode: batch_size = num_envs / 4, async_reset() then recv() a batch,
         send() its actions, and so on (robosim.vector's batch_size= mode, the same calls).

The actions are uniform random in each action space, drawn before the timing. Printed per
configuration: env-steps per second (wall), and env-steps per CPU-second: the steps over the
CPU time every process involved used (EnvPool: this process, its worker threads included;
robosim: this process and the server), i.e. env-steps per second per fully busy core, which a
shared machine's load moves far less than the wall-time rate; and that CPU time per env-step
split between this process and the server.

    .venv/bin/python bench/envpool_compare.py [--rounds 3] [--seconds 1] [--sizes 16,256,1024]

Where envpool does not import, the EnvPool rows are left out and a line says why."""
import argparse
import os
import statistics
import time

import numpy as np

import robosim

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def random_actions(space, shape_n, count, rng):
    """`count` batches of shape_n random actions from the single-env action space `space`."""
    import gymnasium as gym
    if isinstance(space, gym.spaces.Discrete):
        return [rng.integers(space.start, space.start + space.n, shape_n).astype(np.int32)
                for _ in range(count)]
    low = np.maximum(space.low, -1e3)
    high = np.minimum(space.high, 1e3)
    return [rng.uniform(low, high, (shape_n,) + space.shape).astype(space.dtype)
            for _ in range(count)]


class Config:
    """One environment set (a library, a task, a size, a mode) and how to time it."""

    def __init__(self, lib, task, n, mode, make, single_action_space, server_pid=None):
        self.lib, self.task, self.n, self.mode = lib, task, n, mode
        self.batch = n // 4 if mode == "async" else n
        self.env = make()
        self.server_pid = server_pid
        rng = np.random.default_rng(n)
        self.actions = random_actions(single_action_space(self.env), self.batch, 64, rng)
        self.pending = None  # async: the env ids of the batches left unsent after a block
        self.figures = []

    def cpu(self):
        """CPU seconds so far: this process's and the server's (0 for EnvPool)."""
        return (time.process_time(), proc_cpu(self.server_pid) if self.server_pid else 0.0)

    def run(self, seconds):
        t0, (c0, s0) = time.perf_counter(), self.cpu()
        steps = self._sync(seconds) if self.mode == "sync" else self._async(seconds)
        wall, (c1, s1) = time.perf_counter() - t0, self.cpu()
        self.figures.append((steps / wall, steps / (c1 - c0 + s1 - s0),
                             1e6 * (c1 - c0) / steps, 1e6 * (s1 - s0) / steps))

    def _sync(self, seconds):
        env, acts = self.env, self.actions
        if self.pending is None:
            env.reset(seed=0)
            self.pending = True
        steps, k, end = 0, 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            env.step(acts[k % 64])
            steps += self.n
            k += 1
        return steps

    def _async(self, seconds):
        env, acts = self.env, self.actions
        if self.pending is None:
            env.async_reset()
        else:
            for k, ids in enumerate(self.pending):
                env.send(acts[k % 64], ids)
        steps, k, end = 0, 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            ids = env.recv()[4]["env_id"]
            steps += len(ids)
            env.send(acts[k % 64], ids)
            k += 1
        self.pending = []
        for _ in range(self.n // self.batch):  # every batch in flight, read back
            ids = env.recv()[4]["env_id"]
            steps += len(ids)
            self.pending.append(np.array(ids))
        return steps

    def close(self):
        if self.lib == "robosim":
            self.env.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--sizes", default="16,256,1024")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    try:
        import envpool
        why_not = None
    except Exception as exc:  # not installed, or its extension does not load here
        envpool, why_not = None, "%s: %s" % (type(exc).__name__, exc)
    total = 2 * 2 * sum(sizes)
    configs = []
    with robosim.LocalServer(max_worlds=total) as server:
        pid = server.proc.pid
        for n in sizes:
            for mode in ("sync", "async"):
                if envpool is not None:
                    for task in ("Pendulum-v1", "CartPole-v1"):
                        kw = dict(env_type="gymnasium", num_envs=n, seed=0)
                        if mode == "async":
                            kw["batch_size"] = n // 4
                        configs.append(Config("envpool", task, n, mode,
                                              lambda t=task, k=kw: envpool.make(t, **k),
                                              lambda e: e.action_space))
                for task in ("FingerPush-v1", "SerialArmReach-v1"):
                    kw = dict(num_envs=n, endpoint=server.endpoint)
                    if mode == "async":
                        kw["batch_size"] = n // 4
                    configs.append(Config("robosim", task, n, mode,
                                          lambda t=task, k=kw: robosim.vector.make(t, **k),
                                          lambda e: e.single_action_space, pid))
        print("%d cores; %d rounds of %g s per configuration; envpool %s; robosim-server at "
              "its defaults" % (os.cpu_count(), args.rounds, args.seconds,
                                envpool.__version__ if envpool else "not run (%s)" % why_not))
        for c in configs:  # warm-up
            c.run(0.1)
            c.figures.clear()
        for _ in range(args.rounds):
            for c in configs:
                c.run(args.seconds)
        for c in configs:
            c.close()
    med = statistics.median
    print("| library | env | num_envs | mode | env-steps/s | env-steps per CPU-second | "
          "CPU us per env-step: this process, server |")
    print("|---|---|---:|---|---:|---:|---:|")
    by = {}
    for c in configs:
        rate, per_cpu, client_us, server_us = (med(f[k] for f in c.figures) for k in range(4))
        by[(c.task, c.n, c.mode)] = rate
        print("| %s | %s | %d | %s%s | %.0f | %.0f | %.2f, %s |" % (
            c.lib, c.task, c.n, c.mode, " (batch %d)" % c.batch if c.mode == "async" else "",
            rate, per_cpu, client_us, "%.2f" % server_us if c.server_pid else "-"))
    if envpool is not None and 1024 in sizes:
        for mode in ("sync", "async"):
            print("FingerPush-v1 / EnvPool Pendulum-v1 at 1024 envs, %s: %.2f" % (
                mode, by[("FingerPush-v1", 1024, mode)] / by[("Pendulum-v1", 1024, mode)]))


if __name__ == "__main__":
    main()
