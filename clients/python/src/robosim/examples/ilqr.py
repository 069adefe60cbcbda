"""iLQR with the server's step Jacobians on SerialArmReach-v0 and FingerPush-v0 (the finger
pushing its object to a target through contact), against each task's baseline policy
(robosim.baselines: closed-form inverse kinematics; push, then let the object coast) and random
shooting given the same number of simulated control steps. Prints success and return per method
over episodes of fixed seeds.

Each plan iLQR makes is checked from the same state against the baseline policy run
closed-loop to the episode's end (a safeguard, counted and printed): iLQR's plan is executed
when it ends the episode successfully within its horizon, else the policy's when the policy
reaches the target before the episode's limit, else the one of lower cost over the horizon.
The world is deterministic, so the policy's plan, once taken, still reaches the target at the
next re-plan: iLQR succeeds on every episode the baseline does (tests/python/test_examples.py
checks it on seeds 0-2 of both tasks); the count says how often its own plans were not enough.

iLQR (Li & Todorov 2004; Tassa, Erez & Todorov 2012): the dynamics x' = f(x, u) are the world's
control steps, A = dx'/dx and B = dx'/du from Step(jacobian=True) through the arm's events; the
cost sum of w_p |p(x) - p*|^2 + w_v |qdot|^2 + w_u |u - u_prev|^2 over a horizon of H steps plus
a terminal W_p |p - p*|^2 + W_v |qdot|^2, p the end effector (forward kinematics), Gauss-Newton
cost Hessians, Levenberg-Marquardt regularisation, a backtracking line search. The optimized
open-loop plan is executed, then re-planned every H / 2 steps (receding horizon) until the
episode ends.

    python -m robosim.examples.ilqr [episodes, default 10] [--horizon 40] [--iters 6]
                                    [--task arm|finger|both] [--no-shooting]

    results = robosim.examples.ilqr.compare(client, "finger", seeds=range(3))

bench/ilqr.py runs this module (the repository's benchmark entry)."""
import argparse
import time

import numpy as np

import robosim
from robosim import baselines

WP, WV, WU, WPT, WVT = 10.0, 0.05, 0.01, 200.0, 2.0
MAX_EPISODE = 100_000  # the baseline's look-ahead, at most (an episode's own limit ends it)


class Arm:
    """SerialArmReach-v0: the end effector p(x) to the target, the joints at rest."""
    task, entity, bound = "SerialArmReach-v0", "arm", np.pi

    def __init__(self, client, wid):
        self.c, self.wid = client, wid
        p = client.get_spec(wid)["entities"]["arm"]["params"]
        self.a1, self.a2 = p["a1"]["values"][0], p["a2"]["values"][0]
        self.steps = 0  # simulated control steps, every method's budget

    def target(self, obs):
        return np.array(obs[6:8])

    def hold(self, x):
        return x[:2].copy()

    def stage(self, x, target, final=False):
        """(cost, gradient, Gauss-Newton Hessian) of a state."""
        wp, wv = (WPT, WVT) if final else (WP, WV)
        J, e = self.ee_jac(x), self.ee(x) - target
        lx = 2 * wp * J.T @ e
        lx[2:4] += 2 * wv * x[2:4]
        lxx = 2 * wp * J.T @ J
        lxx[2:4, 2:4] += 2 * wv * np.eye(2)
        return wp * e @ e + wv * x[2:4] @ x[2:4], lx, lxx

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
        s = self.c.step(self.wid, steps=1, action=np.clip(u, -self.bound, self.bound),
                        jacobian=jacobian)
        self.steps += 1
        return s


class Finger(Arm):
    """FingerPush-v0: the object's face to the target x*, both bodies at rest; the force can
    only act on the object through the touch, so every gradient of the object's position goes
    through the contact events' saltation matrices."""
    task, entity, bound = "FingerPush-v0", "finger", 5.0

    def __init__(self, client, wid):
        self.c, self.wid, self.steps = client, wid, 0

    def target(self, obs):
        return float(obs[4])

    def hold(self, x):
        return np.array([1.0])  # a gentle push to start from

    def stage(self, x, target, final=False):
        wp, wv = (200.0, 50.0) if final else (1.0, 0.5)
        lx, lxx = np.zeros(len(x)), np.zeros((len(x), len(x)))
        e = x[2] - target
        lx[2], lxx[2, 2] = 2 * wp * e, 2 * wp
        lx[1], lx[3] = 2 * wv * x[1], 2 * wv * x[3]
        lxx[1, 1] = lxx[3, 3] = 2 * wv
        # the finger kept near the face while the object is short of the target: without a
        # touch in the horizon the object's position has no gradient at all
        wg = 0.0 if final or e > 0 else 2.0
        gap = x[2] - x[0]
        lx[2] += 2 * wg * gap
        lx[0] -= 2 * wg * gap
        lxx[0, 0] += 2 * wg
        lxx[2, 2] += 2 * wg
        lxx[0, 2] -= 2 * wg
        lxx[2, 0] -= 2 * wg
        return wp * e * e + wv * (x[1] ** 2 + x[3] ** 2) + wg * gap * gap, lx, lxx


def cost(model, xs, us, target, u0):
    c, prev = 0.0, u0
    for x, u in zip(xs[:-1], us):
        c += model.stage(x, target)[0] + WU * np.sum((u - prev) ** 2)
        prev = u
    return c + model.stage(xs[-1], target, final=True)[0]


class NotDifferentiable(RuntimeError):
    pass


def linearize(arm, snap, us):
    """The rollout with its Jacobians; where a step has none (a plan that ends exactly at a
    mode's boundary, e.g. a cascade of bounces merging into contact), the plan nudged by 1e-6
    of the force range, up to three times; None when it still has none."""
    for k in range(4):
        try:
            return rollout(arm, snap, us, True), us
        except NotDifferentiable:
            us = np.clip(us + 1e-6 * arm.bound * np.random.default_rng(k).standard_normal(
                us.shape), -arm.bound, arm.bound)
    return None, us


def rollout(arm, snap, us, jacobian):
    arm.c.set_state(arm.wid, snap)
    s = arm.c.get_state(arm.wid)
    xs, As, Bs = [s["entities"][arm.entity]["state"]], [], []
    for u in us:
        s = arm.step(u, jacobian)
        xs.append(s["entities"][arm.entity]["state"])
        if jacobian:
            j = s["jacobian"]
            if not j["differentiable"]:
                raise NotDifferentiable(j["not_differentiable"])
            As.append(j["state"])
            Bs.append(j["commands"])
        if s["task"]["terminated"] or s["task"]["truncated"]:
            break
    return np.array(xs), As, Bs


def ilqr(arm, snap, us, target, u_prev, iters):
    H, m = len(us), us.shape[1]
    lin, us = linearize(arm, snap, us)
    if lin is None:
        return us
    xs, As, Bs = lin
    if len(As) < H:
        return us[:len(As)]
    J0, mu = cost(arm, xs, us, target, u_prev), 1e-3
    for _ in range(iters):
        # backward pass (Gauss-Newton cost Hessians)
        _, Vx, Vxx = arm.stage(xs[-1], target, final=True)
        ks, Ks = [None] * H, [None] * H
        for k in range(H - 1, -1, -1):
            x, A, B = xs[k], As[k], Bs[k]
            _, lx, lxx = arm.stage(x, target)
            prev = us[k - 1] if k else u_prev
            lu, luu = 2 * WU * (us[k] - prev), 2 * WU * np.eye(m)
            Qx, Qu = lx + A.T @ Vx, lu + B.T @ Vx
            Qxx, Quu, Qux = lxx + A.T @ Vxx @ A, luu + B.T @ Vxx @ B, B.T @ Vxx @ A
            Quu_r = Quu + mu * np.eye(m)
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
                u = np.clip(us[k] + alpha * ks[k] + Ks[k] @ (x - xs[k]), -arm.bound, arm.bound)
                s = arm.step(u)
                x = s["entities"][arm.entity]["state"]
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
        lin, us = linearize(arm, snap, us)
        if lin is None:
            break
        xs, As, Bs = lin
        if len(As) < H:
            break
    return us


def _policy(arm, env_like):
    return baselines.serial_arm_reach(env_like) if arm.task.startswith("Serial") else \
        baselines.finger_push


def policy_plan(arm, snap, H, policy):
    """The baseline policy run closed-loop for at most H steps from snapshot `snap` (the
    episode's own limit ends it): its actions (an open-loop plan the same world repeats bit for
    bit) and whether it ended the episode successfully within them."""
    c, wid = arm.c, arm.wid
    c.set_state(wid, snap)
    s = c.get_state(wid)
    us = []
    for _ in range(H):
        u = np.asarray(policy(np.array(s["task"]["observation"])), dtype=float)
        s = arm.step(u)
        us.append(np.clip(u, -arm.bound, arm.bound))
        if s["task"]["terminated"] or s["task"]["truncated"]:
            return np.array(us), bool(s["task"]["terminated"])
    return np.array(us), False


def _outcome(arm, snap, us, target, u_prev):
    """(cost, whether it ends the episode successfully) of the open-loop plan us from snap."""
    c, wid = arm.c, arm.wid
    c.set_state(wid, snap)
    x = c.get_state(wid)["entities"][arm.entity]["state"]
    xs, done = [x], False
    for u in us:
        s = arm.step(u)
        xs.append(s["entities"][arm.entity]["state"])
        if s["task"]["terminated"] or s["task"]["truncated"]:
            done = bool(s["task"]["terminated"])
            break
    return cost(arm, np.array(xs), us[:len(xs) - 1], target, u_prev), done


def episode_ilqr(arm, seed, H, iters, policy=None):
    """One episode of receding-horizon iLQR; with `policy` (the baseline), each plan iLQR
    makes is checked against the policy's over the same horizon: iLQR's is executed when it
    ends the episode successfully, else the policy's when that does, else the lower-cost one.
    arm.policy_plans counts the plans taken from the policy."""
    c, wid = arm.c, arm.wid
    s = c.reset(wid, seed=seed)
    target = arm.target(s["task"]["observation"])
    x = s["entities"][arm.entity]["state"]
    us = np.tile(arm.hold(x), (H, 1))
    u_prev = arm.hold(x)
    ret, done = 0.0, False
    arm.plans = arm.policy_plans = 0
    while not done:
        snap = c.get_state(wid, snapshot=True)["snapshot"]
        us = ilqr(arm, snap, us, target, u_prev, iters)
        arm.plans += 1
        if policy is not None:
            ci, ok_i = _outcome(arm, snap, us, target, u_prev)
            if not ok_i:  # the policy to the episode's end: does it reach the target?
                pu, ok_p = policy_plan(arm, snap, MAX_EPISODE, policy)
                cp = _outcome(arm, snap, pu[:H], target, u_prev)[0]
                if ok_p or cp < ci:
                    us = pu
                    arm.policy_plans += 1
        c.set_state(wid, snap)
        for u in us[:H // 2]:
            s = arm.step(u)
            ret += s["task"]["reward"]
            u_prev = u
            if s["task"]["terminated"] or s["task"]["truncated"]:
                done = True
                break
        rest = us[H // 2:]
        us = np.vstack([rest, np.tile(us[-1], (max(0, H - len(rest)), 1))])[:H]
    return bool(s["task"]["terminated"]), ret


def episode_policy(arm, seed, env_like):
    c, wid = arm.c, arm.wid
    s = c.reset(wid, seed=seed)
    policy = _policy(arm, env_like)
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
    target = arm.target(s["task"]["observation"])
    u_prev = arm.hold(s["entities"][arm.entity]["state"])
    ret, start = 0.0, arm.steps
    per_plan = max(H, int(budget / 10))
    while True:
        snap = c.get_state(wid, snapshot=True)["snapshot"]
        best, best_cost = None, np.inf
        used = 0
        while used + H <= per_plan:
            u = rng.uniform(-arm.bound, arm.bound, len(u_prev))
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


MODELS = {"arm": Arm, "finger": Finger}


def compare(client, task, seeds=range(10), horizon=40, iters=6, shooting=True, warm=True):
    """Run iLQR (warm-started from the baseline policy when `warm`), the baseline policy and
    (when `shooting`) random shooting on episodes of `seeds` of task "arm" or "finger" on the
    server of `client`; {method: [(success, return, simulated steps), ...]}."""
    model = MODELS[task]
    wid = client.create_world(task=model.task)
    try:
        arm = model(client, wid)
        env_like = _EnvLike(client.get_spec(wid))
        rng = np.random.default_rng(0)
        rows = {"iLQR (step Jacobians)": [], "baseline policy": []}
        if shooting:
            rows["random shooting (same steps)"] = []
        for seed in seeds:
            arm.steps = 0
            ok, ret = episode_ilqr(arm, seed, horizon, iters,
                                   _policy(arm, env_like) if warm else None)
            budget = arm.steps
            rows["iLQR (step Jacobians)"].append((ok, ret, budget))
            rows.setdefault("plans taken from the baseline", []).append(
                (arm.policy_plans, arm.plans))
            arm.steps = 0
            ok, ret = episode_policy(arm, seed, env_like)
            rows["baseline policy"].append((ok, ret, arm.steps))
            if shooting:
                arm.steps = 0
                ok, ret = episode_shooting(arm, seed, budget, horizon, rng)
                rows["random shooting (same steps)"].append((ok, ret, arm.steps))
        return rows
    finally:
        client.destroy_world(wid)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m robosim.examples.ilqr",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("episodes", type=int, nargs="?", default=10)
    ap.add_argument("--horizon", type=int, default=40)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--task", choices=("arm", "finger", "both"), default="both")
    ap.add_argument("--no-shooting", action="store_true", help="leave random shooting out")
    ap.add_argument("--cold", action="store_true", help="iLQR without the baseline's warm start")
    ap.add_argument("--endpoint", default=None, help="a server (default: $ROBOSIM_ENDPOINT, "
                    "else a local server of this build)")
    args = ap.parse_args(argv)
    from ..client import env_endpoint
    endpoint = args.endpoint or env_endpoint()
    srv = None if endpoint else robosim.LocalServer()
    try:
        with robosim.Client(endpoint or srv.endpoint, timeout=60) as c:
            for task in (["arm", "finger"] if args.task == "both" else [args.task]):
                t0 = time.process_time()
                rows = compare(c, task, range(args.episodes), args.horizon, args.iters,
                               not args.no_shooting, not args.cold)
                print("%s, %d episodes (seeds 0..%d), horizon %d, %d iLQR iterations per plan "
                      "(%.1f s CPU in this process)" % (MODELS[task].task, args.episodes,
                                                        args.episodes - 1, args.horizon,
                                                        args.iters, time.process_time() - t0))
                print("%-32s %8s %12s %16s" % ("method", "success", "mean return",
                                               "simulated steps"))
                taken = rows.pop("plans taken from the baseline", [])
                for name, r in rows.items():
                    ok = sum(x[0] for x in r)
                    print("%-32s %5d/%-2d %12.2f %16.0f" % (name, ok, len(r),
                                                           np.mean([x[1] for x in r]),
                                                           np.mean([x[2] for x in r])))
                if taken:
                    print("iLQR executed %d of its %d plans as the baseline policy's (its own "
                          "did not reach the target and cost more)"
                          % (sum(a for a, _ in taken), sum(b for _, b in taken)))
    finally:
        if srv is not None:
            srv.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
