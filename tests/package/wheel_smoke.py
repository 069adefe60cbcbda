"""Run by scripts/test with the Python of a fresh venv (outside the repository) into which only
build/dist/robosim-*.whl and its dependencies were installed, from a folder outside the
repository, with no ROBOSIM_* variable set. Asserts that the installed package is the wheel's,
that it starts the robosim-server it carries (with the libzmq it carries), and that gym.make,
reset and step work; exits non-zero on the first failure."""
import os
import subprocess
import sys
import sysconfig

import numpy as np


def check(cond, what):
    if not cond:
        sys.exit("wheel smoke test FAILED: %s" % what)


here = os.path.realpath(sysconfig.get_paths()["purelib"])
check(not any(k.startswith("ROBOSIM_") for k in os.environ), "a ROBOSIM_* variable is set")

import gymnasium as gym  # noqa: E402
import robosim  # noqa: E402

pkg = os.path.dirname(os.path.realpath(robosim.__file__))
check(pkg == os.path.join(here, "robosim"), "robosim imported from %s, not the venv's %s"
      % (pkg, here))

# the server is the one in the wheel, and it runs with the wheel's own libzmq
server = robosim.find_server_binary()
check(os.path.realpath(server) == os.path.join(pkg, "bin", "robosim-server"),
      "find_server_binary() gave %s" % server)
ldd = subprocess.run(["ldd", server], capture_output=True, text=True).stdout
zmq = [line.split("=>")[1].split("(")[0].strip() for line in ldd.splitlines()
       if "libzmq" in line and "=>" in line]
check(zmq and os.path.dirname(os.path.realpath(zmq[0])) == os.path.join(here, "robosim.libs"),
      "libzmq is not the wheel's own: %s" % (zmq or ldd))
out = subprocess.run([server, "--version"], capture_output=True, text=True).stdout
check(out.startswith("robosim-server %s " % robosim.__version__), "--version said %r" % out)

env = gym.make("robosim/FingerPush-v0")
obs, info = env.reset(seed=0)
check(env.observation_space.contains(obs), "reset observation %r outside the space" % obs)
for i in range(5):
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    check(env.observation_space.contains(obs), "step %d observation outside the space" % i)
    check(np.isfinite(reward), "step %d reward %r" % (i, reward))
env.close()

# the commands the wheel installs
bindir = sysconfig.get_paths()["scripts"]
for prog in ("robosim", "robosim-eval"):
    out = subprocess.run([os.path.join(bindir, prog), "--version"], capture_output=True,
                         text=True).stdout
    check(out.startswith("%s %s " % (prog, robosim.__version__)), "%s --version said %r"
          % (prog, out))
print("wheel smoke test ok: robosim %s from %s, server %s, 5 FingerPush-v0 steps"
      % (robosim.__version__, pkg, server))
