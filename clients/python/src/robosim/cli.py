"""The `robosim` command:

    robosim tasks [--endpoint E]            the server's tasks (Gymnasium ids) with their rewards
    robosim watch WORLD [--endpoint E]      print a world's states live from the stream
    robosim plot [--out figure1.png] [--gif finger.gif] [--article-law] [--endpoint E]
                 [--env robosim/FingerPush-v0 --policy robosim.baselines:auto --seed S]
    robosim record [--world ID | --all] --out run.mcap    the stream into MCAP (robosim.record)
    robosim replay run.mcap [--plot run.png | --view]   print, plot or view a recording
    robosim view [--endpoint E] [--port P]   a live view in the browser (robosim.view)
    robosim align-plot [--scenario 1|2] [--spec FILE] [--angle RAD] [--seconds S] [--out F.png]
                                            the dual-arm alignment tutorial's alignment:
                                            angle, distances, forces

The endpoint defaults to $ROBOSIM_ENDPOINT; without either, `tasks` and `plot` start a local
robosim-server and `watch` asks tcp://127.0.0.1:5555. `plot` draws the 1D Robot
article's Figure 1 scenario on a finger world, or with --env one episode of a finger task."""
import argparse
import os
import sys

from .errors import RobosimError

from .client import DEFAULT_ENDPOINT, env_endpoint


def _client(endpoint, timeout):
    from .client import Client
    from .server import LocalServer
    server = None
    endpoint = endpoint or env_endpoint()
    if endpoint is None:
        server = LocalServer()
        endpoint = server.endpoint
    return Client(endpoint, timeout=timeout), server


def cmd_tasks(args):
    client, server = _client(args.endpoint, args.timeout)
    try:
        for name in client.server["tasks"]:
            wid = client.create_world(task=name)
            t = client.get_spec(wid)["task"]
            client.destroy_world(wid)
            print("robosim/%s\n  observation: %s\n  action: %s\n  reward: %s\n" % (
                name, ", ".join(v["name"] for v in t["observation"]),
                ", ".join("%s [%g, %g] %s" % (v["name"], v["lower"], v["upper"], v["unit"])
                          for v in t["action"]), t["reward"]))
    finally:
        client.close()
        if server:
            server.close()
    return 0


def cmd_watch(args):
    from .observer import Observer
    endpoint = args.endpoint or env_endpoint() or DEFAULT_ENDPOINT
    obs = Observer(endpoint, args.world, stream_endpoint=args.stream, timeout=args.timeout)
    n = 0
    try:
        while args.count is None or n < args.count:
            try:
                s = obs.next()
            except RobosimError as exc:
                if exc.code_name == "TIMEOUT" and args.count is None:
                    continue
                raise
            n += 1
            parts = ["seq %d" % s["seq"], "t %.4f s" % s["time"], "step %d" % s["step_count"]]
            for name, e in s["entities"].items():
                parts.append("%s[%s] x=%s" % (name, e["mode"], " ".join(
                    "%.4g" % v for v in e["state"][:4])))
            if s["task"]:
                parts.append("reward %.4g" % s["task"]["reward"])
            for ev in s["events"]:
                parts.append("EVENT %s.%s@%.4f" % (ev["entity"], ev["kind"], ev["time"]))
            print("  ".join(parts), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        obs.close()
    if obs.missed:
        print("(missed %d states)" % obs.missed, file=sys.stderr)
    return 0


def cmd_plot(args):
    from . import plot
    if args.env:
        import gymnasium as gym
        from .baselines import make_policy
        from ._util import load_object
        from .envs import register_envs
        register_envs()
        endpoint = args.endpoint or env_endpoint()
        kwargs = {"endpoint": endpoint} if endpoint else {}
        env = gym.make(args.env, **kwargs)
        try:
            policy = make_policy(load_object(args.policy), env)
            states, ret = plot.episode_run(env, policy, seed=args.seed)
            spec = env.unwrapped.world_spec
            task = env.unwrapped.task
            target = states[0]["task"]["observation"][4] if task.startswith("FingerPush") else None
            plot.plot_finger_run(states, args.out, target=target,
                                 title="%s, seed %d: return %.2f in %d steps"
                                 % (task, args.seed, ret, len(states) - 1))
            if args.gif:
                plot.write_gif(spec, states, args.gif, task=task, every=1, fps=10,
                               progress=True)
        finally:
            env.close()
    else:
        client, server = _client(args.endpoint, args.timeout)
        try:
            states, spec = plot.figure1_run(client, progress=True,
                                               article_law=args.article_law)
            title = ("1D finger and object under the 1D Robot article's contact law "
                     "(friction_law = 1)" if args.article_law else None)
            plot.plot_finger_run(states, args.out, title=title)
            if args.gif:
                plot.write_gif(spec, states, args.gif, every=5, fps=20, progress=True)
        finally:
            client.close()
            if server:
                server.close()
    print("wrote %s%s" % (args.out, (" and " + args.gif) if args.gif else ""))
    return 0


def cmd_align_plot(args):
    import numpy as np

    from . import plot
    client, server = _client(args.endpoint, args.timeout)
    try:
        spec = args.spec or ("examples/specs/dual_arm_alignment.jsonld" if args.scenario == 1
                             else "examples/specs/dual_arm_alignment_passive.jsonld")
        states, _info = plot.alignment_run(client, spec, angle=args.angle,
                                           seconds=args.seconds, scenario=args.scenario)
        t, ang, dl, dr, fl, fr = plot.alignment_figures(states)
        plot.plot_alignment(states, args.out, title="Scenario %d: alignment from %+.2f rad (%s)"
                            % (args.scenario, args.angle, os.path.basename(spec)))
        ok = (np.abs(ang) < 1.0) & (dl > 0.679) & (dl < 0.721) & (dr > 0.679) & (dr < 0.721)
        # the first time from which it stays aligned to the end
        since = None
        for i in range(len(t) - 1, -1, -1):
            if not ok[i]:
                break
            since = t[i]
        print("wrote %s; at t = %.2f s: angle %+.3f deg, distances %.4f %.4f m, normal forces "
              "%.2f %.2f N; aligned from t = %s" % (args.out, t[-1], ang[-1], dl[-1], dr[-1],
                                                    fl[-1], fr[-1],
                                                    "%.2f s" % since if since is not None
                                                    else "(not aligned)"))
    finally:
        client.close()
        if server:
            server.close()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="robosim", description="robosim Python tools")
    from ._util import version_text
    p.add_argument("--version", action="version", version=version_text("robosim"))
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tasks", help="list the server's tasks (as robosim/<Task> Gymnasium ids) "
                                     "and their rewards")
    t.add_argument("--endpoint", help="server (default: $ROBOSIM_ENDPOINT, else start a local one)")
    t.set_defaults(fn=cmd_tasks)
    w = sub.add_parser("watch", help="print a world's states live")
    w.add_argument("world", type=int, help="world id")
    w.add_argument("--endpoint", help="server request endpoint (default $ROBOSIM_ENDPOINT, "
                                      "else %s)" % DEFAULT_ENDPOINT)
    w.add_argument("--stream", help="stream endpoint (default: from Hello)")
    w.add_argument("--count", type=int, help="stop after this many states")
    w.set_defaults(fn=cmd_watch)
    pl = sub.add_parser("plot", help="draw a finger run like the 1D Robot article's Figure 1")
    pl.add_argument("--endpoint", help="server (default: $ROBOSIM_ENDPOINT, else start a local one)")
    pl.add_argument("--out", default="figure1.png", help="PNG to write")
    pl.add_argument("--gif", help="also write an animated GIF of the robots here")
    pl.add_argument("--article-law", "--seed000", dest="article_law", action="store_true",
                    help="under the 1D Robot article's own contact law (finger friction_law = "
                         "1), which reproduces the article's Figure 1: the first impact bounces "
                         "off the resting object as off a wall (--seed000: the older name)")
    pl.add_argument("--env", help="plot an episode of this environment instead "
                                  "(robosim/FingerPush-v0 or robosim/FingerTouch-v0)")
    pl.add_argument("--policy", default="robosim.baselines:auto", help="module:callable")
    pl.add_argument("--seed", type=int, default=0)
    pl.set_defaults(fn=cmd_plot)
    from . import fit, record, verify, view
    fit.add_parser(sub)
    record.add_parsers(sub)
    verify.add_parser(sub)
    view.add_parser(sub)
    ap = sub.add_parser("align-plot", help="run the dual-arm alignment tutorial's alignment on a "
                                           "mobile_manipulator world and plot angle, distances "
                                           "and forces")
    ap.add_argument("--scenario", type=int, choices=(1, 2), default=1,
                    help="1: the base driven by its wheels (preset mobile_manipulator); 2: a "
                         "passive base pushed by the arms (preset mobile_manipulator_passive)")
    ap.add_argument("--spec", default=None,
                    help="motion specification (JSON-LD) to load (default: "
                         "examples/specs/dual_arm_alignment.jsonld, scenario 2: "
                         "dual_arm_alignment_passive.jsonld)")
    ap.add_argument("--angle", type=float, default=0.2, help="start angle to the edge (rad)")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--out", default="alignment.png", help="PNG to write")
    ap.add_argument("--endpoint", help="server (default: $ROBOSIM_ENDPOINT, else start a local one)")
    ap.set_defaults(fn=cmd_align_plot)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except RobosimError as exc:
        print("robosim %s: %s" % (args.cmd, exc), file=sys.stderr)
        return 1
    except ImportError as exc:
        extra = EXTRAS.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print("robosim %s needs %s, which the %s extra installs: pip install 'robosim-gym[%s]'"
              % (args.cmd, exc.name, extra, extra), file=sys.stderr)
        return 1


# the optional packages and the extra that installs each (pyproject.toml)
EXTRAS = {"matplotlib": "plot", "PIL": "plot", "tqdm": "plot", "mcap": "record",
          "mcap_protobuf": "record", "zstandard": "record", "lz4": "record", "aiohttp": "view",
          "scipy": "fit"}


if __name__ == "__main__":
    sys.exit(main())
