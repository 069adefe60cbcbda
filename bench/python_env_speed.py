"""The Python client's speed against what a user would compare it with, in one run, interleaved
(every round runs each candidate once, in turn; the figures are medians over the rounds; the
single-call figures of 1 alternate in blocks of --block calls, and each ratio is the median of
the ratios of neighbouring blocks, so that the load of a shared machine cancels):

  1. env.step (gym.make("robosim/<--task>"), all of Gymnasium's wrappers; and with
     full_info=False, the info dict without the events and sensors), Client.step (the
     State decoded into a dict) and Client.step_msg (what env.step sends and reads: prebuilt
     request bytes, the reply message undecoded), each over a raw pyzmq REQ/REP echo of the
     same payload sizes (an echo server in another process: the wire and ZeroMQ with no
     simulation and no protobuf), with the CPU time this (the client's) process spends per
     call beside the wall time: the client's CPU over the echo's is the Python side's own
     cost, the rest of the wall time over the echo's is the server's;
  2. robosim.vector at --vec-envs worlds against Client.step_arrays on the same worlds (the
     columnar request the vector env is built on), in env-steps/s;
  3. robosim.vector against gymnasium.vector.AsyncVectorEnv of --async-envs robosim envs on the
     same server (the same task either way);
  4. SerialArmReach-v0 against Gymnasium's MuJoCo Reacher-v5 in-process (the same job: a
     two-link planar arm reaching a target), one env to one env and the vector env at
     --vec-envs to one Reacher: only where the mujoco package is installed (pip install
     'gymnasium[mujoco]'), else a line says it was skipped. The arm's cost on the server
     depends on the actions (a setpoint held lets the arm settle and the integrator take long
     steps; a new random setpoint each step keeps it moving), so the vector figure is given
     for both: the constant setpoint (0.1, 0.2) rad and uniformly random setpoints.

The wire figures (1-3) use --task, FingerPush-v0 by default: a control step the server
computes in a few microseconds, so they measure the client and the wire; SerialArmReach-v0's
control step costs the server far more (its PID-driven arm under gravity), which 4 includes.

    .venv/bin/python bench/python_env_speed.py [--rounds 5] [--steps 2000] [--task T]

It starts its own robosim-server (found as robosim.find_server_binary does: $ROBOSIM_BIN_DIR,
build/release/bin, PATH) on a free loopback port."""
import argparse
import statistics
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import zmq

import robosim
from robosim._proto import pb

REACH = "SerialArmReach-v0"

ECHO = r"""
import sys, zmq
ctx = zmq.Context()
rep = ctx.socket(zmq.REP)
port = rep.bind_to_random_port("tcp://127.0.0.1")
reply = b"r" * int(sys.argv[1])
print(port, flush=True)
while True:
    if rep.recv() == b"quit":
        rep.send(b"")
        break
    rep.send(reply)
"""


def rate(fn, n):
    """Calls per second of fn() over n calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t0)


def timed(fn, n):
    """Wall and this process's CPU seconds per call of fn() over n calls."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def payload_sizes(client, wid, action):
    """Bytes of a Step request and of its reply, as the client sends and gets them."""
    req = pb.Request(id=1, world_id=wid, token=client.token(wid),
                     step=pb.Step(steps=1, action=action.tolist()))
    state = client.step_msg(wid, action)
    return len(req.SerializeToString()), len(pb.Response(id=1, step=state).SerializeToString())


class Echo:
    def __init__(self, req_size, reply_size):
        self.proc = subprocess.Popen([sys.executable, "-c", ECHO, str(reply_size)],
                                     stdout=subprocess.PIPE, text=True)
        port = int(self.proc.stdout.readline())
        self.sock = zmq.Context.instance().socket(zmq.REQ)
        self.sock.connect("tcp://127.0.0.1:%d" % port)
        self.payload = b"q" * req_size

    def once(self):
        self.sock.send(self.payload)
        self.sock.recv()

    def close(self):
        self.sock.send(b"quit")
        self.sock.recv()
        self.sock.close(0)
        self.proc.wait(5)


def stepper(env, action):
    """env.step with the action, resetting at an episode's end."""
    def once():
        _, _, term, trunc, _ = env.step(action)
        if term or trunc:
            env.reset()
    return once


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=2000, help="single-env steps per round")
    p.add_argument("--block", type=int, default=50, help="calls per interleaved block")
    p.add_argument("--vec-envs", type=int, default=256)
    p.add_argument("--vec-steps", type=int, default=100, help="vector steps per measurement")
    p.add_argument("--async-envs", type=int, default=64)
    p.add_argument("--async-steps", type=int, default=30)
    p.add_argument("--task", default="FingerPush-v0", help="the task of figures 1-3")
    args = p.parse_args(argv)
    TASK = args.task

    try:
        import mujoco  # noqa: F401
        reacher = gym.make("Reacher-v5")
    except ImportError as exc:
        reacher = None
        print("Reacher-v5: SKIPPED, the mujoco package is not installed (%s); "
              "pip install 'gymnasium[mujoco]' to compare" % exc)

    n_worlds = 3 * args.vec_envs + 2 * args.async_envs + 8
    with robosim.LocalServer(max_worlds=n_worlds) as server:
        ep = server.endpoint
        env = gym.make("robosim/" + TASK, endpoint=ep)
        lean = gym.make("robosim/" + TASK, endpoint=ep, full_info=False)
        client = robosim.Client(ep)
        wid = client.create_world(task=TASK, seed=1)
        spec = client.get_spec(wid)["task"]
        act = np.array([0.5 * (v["lower"] + v["upper"]) + 0.1 * (v["upper"] - v["lower"])
                        for v in spec["action"]])
        req_size, reply_size = payload_sizes(client, wid, act)
        echo = Echo(req_size, reply_size)
        venv = robosim.vector.make("robosim/" + TASK, num_envs=args.vec_envs, endpoint=ep)
        raw_ids = [client.create_world(task=TASK, seed=s) for s in range(args.vec_envs)]
        aenv = gym.vector.AsyncVectorEnv(
            [lambda: gym.make("robosim/" + TASK, endpoint=ep)] * args.async_envs)
        avenv = robosim.vector.make("robosim/" + TASK, num_envs=args.async_envs, endpoint=ep)
        print("%s: payloads: request %d B, reply %d B; %d vector envs, %d in AsyncVectorEnv; "
              "robosim %s, gymnasium %s" % (TASK, req_size, reply_size, args.vec_envs,
                                             args.async_envs, robosim.__version__,
                                             gym.__version__))
        vact = np.tile(act, (args.vec_envs, 1))
        aact = np.tile(act, (args.async_envs, 1))
        env.reset(seed=0)
        lean.reset(seed=0)
        venv.reset(seed=0)
        aenv.reset(seed=0)
        avenv.reset(seed=0)
        if reacher is not None:
            reacher.reset(seed=0)
            renv = gym.make("robosim/" + REACH, endpoint=ep)
            rvenv = robosim.vector.make("robosim/" + REACH, num_envs=args.vec_envs, endpoint=ep)
            renv.reset(seed=0)
            rvenv.reset(seed=0)
            ract = np.array([0.1, 0.2])
            rng = np.random.default_rng(0)
            rvact = np.tile(ract, (args.vec_envs, 1))

        def client_step():
            st = client.step(wid, action=act)
            if st["task"]["terminated"] or st["task"]["truncated"]:
                client.reset(wid)

        def msg_step():
            t = client.step_msg(wid, act).task
            if t.terminated or t.truncated:
                client.reset(wid)

        def arrays_step():
            r = client.step_arrays(raw_ids, actions=vact)
            ended = r["terminated"] | r["truncated"]
            if ended.any():  # as the vector env would: a reset in the next request
                client.step_arrays([w for w, e in zip(raw_ids, ended) if e],
                                   reset=np.ones(int(ended.sum()), dtype=bool))

        figures = {k: [] for k in ("echo", "env", "lean", "client", "msg", "vec", "arrays", "async",
                                   "avec", "reacher", "reach_env", "reach_vec",
                                   "reach_vec_random")}
        ratios = {"env": [], "lean": [], "client": [], "msg": []}
        single = ("echo", "env", "lean", "client", "msg")
        cpu = {k: [] for k in single}  # the client process's CPU seconds per call, by block
        env_step = stepper(env, act)
        lean_step = stepper(lean, act)
        for rnd in range(args.rounds):
            blocks = {k: [] for k in single}
            for _ in range(max(1, args.steps // args.block)):
                for k, fn in (("echo", echo.once), ("env", env_step), ("lean", lean_step),
                              ("client", client_step), ("msg", msg_step)):
                    w, c = timed(fn, args.block)
                    blocks[k].append(w)
                    cpu[k].append(c)
                for k in ("env", "lean", "client", "msg"):
                    ratios[k].append(blocks[k][-1] / blocks["echo"][-1])
            for k, b in blocks.items():
                figures[k].append(1.0 / statistics.median(b))
            figures["vec"].append(rate(lambda: venv.step(vact), args.vec_steps) * args.vec_envs)
            figures["arrays"].append(rate(arrays_step, args.vec_steps) * args.vec_envs)
            figures["async"].append(rate(lambda: aenv.step(aact), args.async_steps)
                                    * args.async_envs)
            figures["avec"].append(rate(lambda: avenv.step(aact), args.async_steps)
                                   * args.async_envs)
            if reacher is not None:
                figures["reacher"].append(rate(stepper(reacher, np.zeros(2)), args.steps))
                figures["reach_env"].append(rate(stepper(renv, ract), args.steps // 4))
                figures["reach_vec"].append(rate(lambda: rvenv.step(rvact), args.vec_steps // 4)
                                            * args.vec_envs)
                figures["reach_vec_random"].append(rate(
                    lambda: rvenv.step(rng.uniform(-np.pi, np.pi, rvact.shape)),
                    args.vec_steps // 4) * args.vec_envs)
            print("round %d: " % (rnd + 1) + ", ".join(
                "%s %.0f/s" % (k, v[-1]) for k, v in figures.items() if v), flush=True)

        m = {k: statistics.median(v) for k, v in figures.items() if v}
        us = {k: 1e6 / m[k] for k in single}
        cpu_us = {k: 1e6 * statistics.median(v) for k, v in cpu.items()}
        print("\nmedians over %d rounds:" % args.rounds)
        print("  raw pyzmq REQ/REP echo     %7.1f us per round trip (client CPU %.1f us)"
              % (us["echo"], cpu_us["echo"]))
        print("  env.step                   %7.1f us  = %.2fx the echo (goal <= 1.5x), client "
              "CPU %.1f us" % (us["env"], statistics.median(ratios["env"]), cpu_us["env"]))
        print("  env.step, full_info=False  %7.1f us  = %.2fx the echo, client CPU %.1f us"
              % (us["lean"], statistics.median(ratios["lean"]), cpu_us["lean"]))
        print("  Client.step                %7.1f us  = %.2fx the echo (goal <= 1.3x), client "
              "CPU %.1f us" % (us["client"], statistics.median(ratios["client"]),
                               cpu_us["client"]))
        print("  Client.step_msg            %7.1f us  = %.2fx the echo, client CPU %.1f us"
              % (us["msg"], statistics.median(ratios["msg"]), cpu_us["msg"]))
        print("  so of env.step's %.1f us over the echo, the client process's own CPU is "
              "%.1f us (env %.1f on top of step_msg)"
              % (us["env"] - us["echo"], cpu_us["env"] - cpu_us["echo"],
                 cpu_us["env"] - cpu_us["msg"]))
        print("  robosim.vector x %-4d      %7.0f env-steps/s = %.0f%% of Client.step_arrays "
              "(%.0f/s) (goal >= 80%%)" % (args.vec_envs, m["vec"], 100 * m["vec"] / m["arrays"],
                                           m["arrays"]))
        print("  robosim.vector x %-4d      %7.0f env-steps/s = %.1fx AsyncVectorEnv x %d "
              "(%.0f/s) (goal >= 10x)" % (args.async_envs, m["avec"], m["avec"] / m["async"],
                                          args.async_envs, m["async"]))
        if reacher is not None:
            print("  %s env      %7.0f steps/s = %.2fx Reacher-v5 in-process (%.0f/s) "
                  "(goal >= 1x)" % (REACH, m["reach_env"], m["reach_env"] / m["reacher"],
                                    m["reacher"]))
            print("  %s vector x %d %7.0f env-steps/s = %.1fx Reacher-v5 (goal >= 5x), "
                  "constant setpoint" % (REACH, args.vec_envs, m["reach_vec"],
                                         m["reach_vec"] / m["reacher"]))
            print("  %s vector x %d %7.0f env-steps/s = %.1fx Reacher-v5, random setpoints"
                  % (REACH, args.vec_envs, m["reach_vec_random"],
                     m["reach_vec_random"] / m["reacher"]))
            renv.close()
            rvenv.close()
        else:
            print("  Reacher-v5 comparison SKIPPED: mujoco is not installed")

        aenv.close(terminate=True)
        avenv.close()
        venv.close()
        echo.close()
        env.close()
        lean.close()
        client.close()


if __name__ == "__main__":
    main()
