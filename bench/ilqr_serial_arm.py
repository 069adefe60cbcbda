"""iLQR with the server's step Jacobians on SerialArmReach-v0, against the task's baseline
policy (closed-form inverse kinematics) and random shooting given the same number of simulated
control steps. Prints success and return per method over episodes of fixed seeds.

iLQR (Li & Todorov 2004; Tassa, Erez & Todorov 2012): the dynamics x' = f(x, u) are the world's
control steps, A = dx'/dx and B = dx'/du from Step(jacobian=True) through the arm's events; the
cost sum of w_p |p(x) - p*|^2 + w_v |qdot|^2 + w_u |u - u_prev|^2 over a horizon of H steps plus
a terminal W_p |p - p*|^2 + W_v |qdot|^2, p the end effector (forward kinematics), Gauss-Newton
cost Hessians, Levenberg-Marquardt regularisation, a backtracking line search. The optimized
open-loop plan is executed, then re-planned every H / 2 steps (receding horizon) until the
episode ends.

    python bench/ilqr_serial_arm.py [episodes, default 10] [--horizon 40] [--iters 6]"""
import argparse
import time

import numpy as np

import robosim
from robosim import baselines

TASK = "SerialArmReach-v0"
WP, WV, WU, WPT, WVT = 10.0, 0.05, 0.01, 200.0, 2.0


class Arm:
    def __init__(self, client, wid):
        self.c, self.wid = client, wid
        p = client.get_spec(wid)["entities"]["arm"]["params"]
        self.a1, self.a2 = p["a1"]["values"][0], p["a2"]["values"][0]
        self.steps = 0  # simulated control steps, every method's budget

    def ee(self, x):
        t1, t12 = x[0], x[0] + x[1]
        return np.array([self.a1 * np.cos(t1) + self.a2 * np.cos(t12),
                         self.a1 * np.sin(t1) + self.a2 * np.sin(t12)])

    def ee_jac(self, x):
        t1, t12 = x[0], x[0] + x[1]
        J = np.zeros((2, len(x)))
        J[0, 0] = -self.a1 * np.sin(t1) - self.a2 * np.sin(t12)
        J[0, 1] = -self.a2 * np.sin(t12)
        J[1, 0] = self.a1 * np.cos(t1) + self.a2 * np.cos(t12)
        J[1, 1] = self.a2 * np.cos(t12)
        return J

    def step(self, u, jacobian=False):
        s = self.c.step(self.wid, steps=1, action=np.clip(u, -np.pi, np.pi), jacobian=jacobian)
        self.steps += 1
        return s


def cost(arm, xs, us, target, u0):
    c, prev = 0.0, u0
    for x, u in zip(xs[:-1], us):
        c += WP * np.sum((arm.ee(x) - target) ** 2) + WV * np.sum(x[2:4] ** 2) \
            + WU * np.sum((u - prev) ** 2)
        prev = u
    x = xs[-1]
    return c + WPT * np.sum((arm.ee(x) - target) ** 2) + WVT * np.sum(x[2:4] ** 2)


def rollout(arm, snap, us, jacobian):
    arm.c.set_state(arm.wid, snap)
    s = arm.c.get_state(arm.wid)
    xs, As, Bs = [s["entities"]["arm"]["state"]], [], []
    for u in us:
        s = arm.step(u, jacobian)
        xs.append(s["entities"]["arm"]["state"])
        if jacobian:
            j = s["jacobian"]
            if not j["differentiable"]:
                raise RuntimeError(j["not_differentiable"])
            As.append(j["state"])
            Bs.append(j["commands"])
        if s["task"]["terminated"] or s["task"]["truncated"]:
            break
    return np.array(xs), As, Bs


def ilqr(arm, snap, us, target, u_prev, iters):
    H, n = len(us), 6
    xs, As, Bs = rollout(arm, snap, us, True)
    if len(As) < H:
        return us[:len(As)]
    J0, mu = cost(arm, xs, us, target, u_prev), 1e-3
    for _ in range(iters):
        # backward pass (Gauss-Newton cost Hessians)
        x = xs[-1]
        Jp = arm.ee_jac(x)
        e = arm.ee(x) - target
        Vx = 2 * WPT * Jp.T @ e
        Vx[2:4] += 2 * WVT * x[2:4]
        Vxx = 2 * WPT * Jp.T @ Jp
        Vxx[2:4, 2:4] += 2 * WVT * np.eye(2)
        ks, Ks = [None] * H, [None] * H
        for k in range(H - 1, -1, -1):
            x, A, B = xs[k], As[k], Bs[k]
            Jp, e = arm.ee_jac(x), arm.ee(x) - target
            lx = 2 * WP * Jp.T @ e
            lx[2:4] += 2 * WV * x[2:4]
            lxx = 2 * WP * Jp.T @ Jp
            lxx[2:4, 2:4] += 2 * WV * np.eye(2)
            prev = us[k - 1] if k else u_prev
            lu, luu = 2 * WU * (us[k] - prev), 2 * WU * np.eye(2)
            Qx, Qu = lx + A.T @ Vx, lu + B.T @ Vx
            Qxx, Quu, Qux = lxx + A.T @ Vxx @ A, luu + B.T @ Vxx @ B, B.T @ Vxx @ A
            Quu_r = Quu + mu * np.eye(2)
            ks[k] = -np.linalg.solve(Quu_r, Qu)
            Ks[k] = -np.linalg.solve(Quu_r, Qux)
            Vx = Qx + Ks[k].T @ Quu @ ks[k] + Ks[k].T @ Qu + Qux.T @ ks[k]
            Vxx = Qxx + Ks[k].T @ Quu @ Ks[k] + Ks[k].T @ Qux + Qux.T @ Ks[k]
            Vxx = (Vxx + Vxx.T) / 2
        # forward pass with a line search (plain steps)
        improved = False
        for alpha in (1.0, 0.5, 0.25, 0.1):
            arm.c.set_state(arm.wid, snap)
            x = xs[0]
            new_u, new_x = [], [x]
            for k in range(H):
                u = np.clip(us[k] + alpha * ks[k] + Ks[k] @ (x - xs[k]), -np.pi, np.pi)
                s = arm.step(u)
                x = s["entities"]["arm"]["state"]
                new_u.append(u)
                new_x.append(x)
                if s["task"]["terminated"] or s["task"]["truncated"]:
                    break  # the episode ended (success): the plan's remainder is moot
            Jn = cost(arm, np.array(new_x), new_u, target, u_prev)
            if len(new_u) < H:  # ended early: keep the rest of the old plan
                Jn = -np.inf if s["task"]["terminated"] else Jn
                new_u = list(new_u) + list(us[len(new_u):])
            if Jn < J0:
                us, J0, improved = np.array(new_u), Jn, True
                mu = max(1e-6, mu / 4)
                break
        if not improved:
            mu *= 10
            if mu > 1e3:
                break
            continue
        if J0 == -np.inf:
            break  # it reaches the target within the horizon
        xs, As, Bs = rollout(arm, snap, us, True)
        if len(As) < H:
            break
    return us


def episode_ilqr(arm, seed, H, iters):
    c, wid = arm.c, arm.wid
    s = c.reset(wid, seed=seed)
    obs = s["task"]["observation"]
    target = np.array(obs[6:8])
    x = s["entities"]["arm"]["state"]
    us = np.tile(x[:2], (H, 1))
    u_prev = x[:2].copy()
    ret, done = 0.0, False
    while not done:
        snap = c.get_state(wid, snapshot=True)["snapshot"]
        us = ilqr(arm, snap, us, target, u_prev, iters)
        c.set_state(wid, snap)
        for u in us[:H // 2]:
            s = arm.step(u)
            ret += s["task"]["reward"]
            u_prev = u
            if s["task"]["terminated"] or s["task"]["truncated"]:
                done = True
                break
        us = np.vstack([us[H // 2:], np.tile(us[-1], (H // 2, 1))])
    return bool(s["task"]["terminated"]), ret


def episode_policy(arm, seed, env_like):
    c, wid = arm.c, arm.wid
    s = c.reset(wid, seed=seed)
    policy = baselines.serial_arm_reach(env_like)
    ret = 0.0
    while True:
        s = arm.step(policy(np.array(s["task"]["observation"])))
        ret += s["task"]["reward"]
        if s["task"]["terminated"] or s["task"]["truncated"]:
            return bool(s["task"]["terminated"]), ret


def episode_shooting(arm, seed, budget, H, rng):
    """Random shooting: random constant setpoints held for H steps, the best by the same cost,
    re-planned every H / 2 steps, until the budget of simulated steps (iLQR's) is spent on
    planning or the episode ends."""
    c, wid = arm.c, arm.wid
    s = c.reset(wid, seed=seed)
    target = np.array(s["task"]["observation"][6:8])
    u_prev = s["entities"]["arm"]["state"][:2].copy()
    ret, start = 0.0, arm.steps
    per_plan = max(H, int(budget / 10))
    while True:
        snap = c.get_state(wid, snapshot=True)["snapshot"]
        best, best_cost = None, np.inf
        used = 0
        while used + H <= per_plan:
            u = rng.uniform(-np.pi, np.pi, 2)
            xs, _, _ = rollout(arm, snap, [u] * H, False)
            used += len(xs) - 1
            J = cost(arm, xs, [u] * (len(xs) - 1), target, u_prev)
            if J < best_cost:
                best, best_cost = u, J
        c.set_state(wid, snap)
        for _ in range(H // 2):
            s = arm.step(best)
            ret += s["task"]["reward"]
            if s["task"]["terminated"] or s["task"]["truncated"]:
                return bool(s["task"]["terminated"]), ret
        u_prev = best
        if arm.steps - start > 2 * budget:
            per_plan = H  # over budget: keep the last plan's choice cheaply


class _EnvLike:
    """What baselines.serial_arm_reach reads of an env: its world spec."""

    def __init__(self, spec):
        self.unwrapped = self
        self.world_spec = spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("episodes", type=int, nargs="?", default=10)
    ap.add_argument("--horizon", type=int, default=40)
    ap.add_argument("--iters", type=int, default=6)
    args = ap.parse_args()
    with robosim.LocalServer() as srv, robosim.Client(srv.endpoint, timeout=60) as c:
        wid = c.create_world(task=TASK)
        arm = Arm(c, wid)
        env_like = _EnvLike(c.get_spec(wid))
        rng = np.random.default_rng(0)
        rows = {"iLQR (step Jacobians)": [], "baseline (inverse kinematics)": [],
                "random shooting (same steps)": []}
        for seed in range(args.episodes):
            arm.steps = 0
            t0 = time.process_time()
            ok, ret = episode_ilqr(arm, seed, args.horizon, args.iters)
            budget = arm.steps
            rows["iLQR (step Jacobians)"].append((ok, ret, budget, time.process_time() - t0))
            arm.steps = 0
            ok, ret = episode_policy(arm, seed, env_like)
            rows["baseline (inverse kinematics)"].append((ok, ret, arm.steps, 0.0))
            arm.steps = 0
            ok, ret = episode_shooting(arm, seed, budget, args.horizon, rng)
            rows["random shooting (same steps)"].append((ok, ret, arm.steps, 0.0))
        print("%s, %d episodes (seeds 0..%d), horizon %d, %d iLQR iterations per plan"
              % (TASK, args.episodes, args.episodes - 1, args.horizon, args.iters))
        print("%-32s %8s %12s %16s" % ("method", "success", "mean return",
                                       "simulated steps"))
        for name, r in rows.items():
            ok = sum(x[0] for x in r)
            print("%-32s %5d/%-2d %12.2f %16.0f" % (name, ok, len(r), np.mean([x[1] for x in r]),
                                                   np.mean([x[2] for x in r])))


if __name__ == "__main__":
    main()
