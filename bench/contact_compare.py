"""The brick drop, the finger and the diff-drive bumper under the three contact formulations,
and random tilted brick drops, in one command.

Runs bench_core_contact (built by `scripts/build release`), prints its tables, and plots the
three trajectories (height and horizontal position of the brick's centre, and the contact force
sensor) on one figure:

    .venv/bin/python bench/contact_compare.py [--out contact_compare.png] [--tilted N] [--seed S]

The tilted-drop table summarises N seeded random drops per formulation (bench/core_contact.c's
tilted_rows says how they are drawn and what each column measures): the drops that broke an
invariant, those at rest on a face at the end of 5 s and how soon, the deepest penetration
(below the contact surface, and below the ground itself), the energy gained at an impact and
overall (0 is exact: nothing drives the brick), the final height's error on its face, and the
CPU and wall time per 10 ms control step (the formulations interleaved drop by drop).

The binary is looked up in $ROBOSIM_BIN_DIR, else build/release/bin.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def tilted_table(rows, n, seed):
    """Print the summary of the tilted drops, one row per formulation."""
    print(f"\nrandom tilted brick drops: {n} per formulation (seed {seed}), theta0 in "
          "[0.05, pi/2 - 0.05], lowest corner 0.02-0.5 m up, omega0 in [-10, 10] rad/s, "
          "e in [0, 0.6], mu in [0.3, 1.2]; 5 s at 10 ms control steps")
    head = ("formulation", "violations", "on_face", "t_rest_med", "t_rest_max", "max_pen",
            "below_ground", "impact_gain", "energy_rise", "height_err", "cpu_us", "wall_us")
    print(("{:<14}" + " {:>12}" * (len(head) - 1)).format(*head))
    for name in ("hybrid", "time_stepping", "compliant"):
        r = [row for row in rows if row["formulation"] == name]
        f = lambda key: [float(row[key]) for row in r]  # noqa: E731
        rest = sorted(t for t in f("t_rest") if math.isfinite(t))
        med = lambda v: sorted(v)[len(v) // 2] if v else math.nan  # noqa: E731
        errors = {row["error"] for row in r if row["error"]}
        print(("{:<14} {:>12} {:>12}" + " {:>12.3g}" * 7 + " {:>12.1f}" * 2).format(
            name, f"{sum(int(row['violation']) for row in r)}/{len(r)}", f"{len(rest)}/{len(r)}",
            med(rest), max(rest, default=math.nan), max(f("max_pen")), max(f("below_ground")),
            max(f("impact_gain")), max(f("energy_rise")),
            max(abs(h) for h in f("height_err")), med(f("cpu_us")), med(f("wall_us"))))
        for e in sorted(errors):
            print(f"  {name} error: {e}")
    print("  (max_pen: below the contact surface, the padding's for compliant; impact_gain: "
          "compliant has no impact events; energy in J for a 1 kg brick; times in us per step, "
          "medians)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="contact_compare.png", help="the PNG to write")
    ap.add_argument("--tilted", type=int, default=100, metavar="N",
                    help="random tilted drops per formulation (0: none)")
    ap.add_argument("--seed", type=int, default=1, help="the tilted drops' seed")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    bindir = Path(os.environ.get("ROBOSIM_BIN_DIR", root / "build" / "release" / "bin"))
    exe = bindir / "bench_core_contact"
    if not exe.exists():
        print(f"{exe} not found: run scripts/build release first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "traj.csv"
        subprocess.run([str(exe), "--csv", str(path)], check=True)
        rows = list(csv.DictReader(path.open()))
    if args.tilted > 0:
        out = subprocess.run([str(exe), "--tilted", str(args.tilted), str(args.seed)],
                             check=True, capture_output=True, text=True).stdout
        tilted_table(list(csv.DictReader(out.splitlines())), args.tilted, args.seed)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(5, 1, figsize=(7, 11))
    for name, style in (("hybrid", "-"), ("time_stepping", "--"), ("compliant", ":")):
        r = [row for row in rows if row["formulation"] == name]
        t = [float(row["t"]) for row in r]
        for ax, key in zip(axes, ("y", "x", "contact_fy")):
            ax.plot(t, [float(row[key]) for row in r], style, label=name)
        r = [row for row in rows if row["formulation"] == "diff_drive:" + name]
        axes[3].plot([float(row["t"]) for row in r], [float(row["x"]) for row in r], style,
                     label=name)
        r = [row for row in rows if row["formulation"] == "finger:" + name]
        axes[4].plot([float(row["t"]) for row in r], [float(row["y"]) for row in r], style,
                     label=name)
    axes[3].set_ylabel("diff-drive x (m)")
    axes[3].set_xlabel("t (s): the diff-drive robot reaching the obstacle at x = 0.75 m")
    axes[4].set_ylabel("finger: object x_o (m)")
    axes[4].set_xlabel("t (s): the article's finger pushing (F = 2 N) the object")
    for ax in axes[1:3]:
        ax.sharex(axes[0])
    axes[0].set_ylabel("height y (m)")
    axes[1].set_ylabel("x (m)")
    axes[2].set_ylabel("mean contact force (N)")
    axes[2].set_yscale("symlog", linthresh=10.0)
    axes[2].set_xlabel("t (s)")
    axes[0].legend()
    axes[0].set_title("brick drop (contact-dynamics lecture): H = 0.45 m, vx0 = 1 m/s, e = 0.5, mu = 0.5")
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)
    print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
