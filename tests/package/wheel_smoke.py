"""Run by scripts/test with the Python of a fresh venv (outside the repository) into which only
`pip install robosim-gym[video]` (from the wheel CI built from the source distribution) and its
dependencies were installed, from a folder outside the
repository, with no ROBOSIM_* variable set. Asserts that the installed package is the wheel's,
that it starts the robosim-server it carries (with the libzmq it carries), that gym.make, reset
and step work, that robosim-server and robosim-cli run from PATH (a server started from PATH
answers robosim-cli hello; docs/python.md's recipe for remote users, CURVE keys from robosim-cli
keygen), that the README's first loop runs warning-free, that the example
specifications load from the package data and MobileAlign-v1's baseline runs, that
RecordVideo writes a video (the video extra) and that the package ships its stubs; exits
non-zero on the first failure. The README's loop is passed as the first argument (a file)."""
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import warnings

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
check(zmq and os.path.dirname(os.path.realpath(zmq[0])) == os.path.join(here, "robosim_gym.libs"),
      "libzmq is not the wheel's own: %s" % (zmq or ldd))
out = subprocess.run([server, "--version"], capture_output=True, text=True).stdout
check(out.startswith("robosim-server %s " % robosim.__version__), "--version said %r" % out)

env = gym.make("robosim/FingerPush-v1")
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
# robosim-server and robosim-cli on PATH: the venv's console scripts, running the wheel's programs
path_env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
for prog in ("robosim-server", "robosim-cli"):
    where = shutil.which(prog, path=path_env["PATH"])
    check(where == os.path.join(bindir, prog), "%s on PATH is %s" % (prog, where))
    out = subprocess.run([prog, "--version"], capture_output=True, text=True, env=path_env)
    check(out.returncode == 0 and out.stdout.startswith("%s %s " % (prog, robosim.__version__)),
          "%s --version said %r %r" % (prog, out.stdout, out.stderr))
    check(os.path.isfile(os.path.join(pkg, "bin", prog)), "robosim/bin/%s missing" % prog)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
endpoint = "tcp://127.0.0.1:%d" % port
proc = subprocess.Popen(["robosim-server", "--bind", endpoint, "--no-stream"], env=path_env,
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE)
try:
    deadline, said = time.monotonic() + 20, None
    while time.monotonic() < deadline:
        said = subprocess.run(["robosim-cli", "--endpoint", endpoint, "hello"], env=path_env,
                              capture_output=True, text=True, timeout=10)
        if said.returncode == 0:
            break
        time.sleep(0.2)
    check(said is not None and said.returncode == 0 and robosim.__version__ in said.stdout,
          "robosim-cli hello to the robosim-server from PATH: %r" % (said,))
finally:
    proc.terminate()
    proc.wait(10)
    proc.stderr.close()

# docs/python.md's recipe for serving remote users from the wheel alone: keys from robosim-cli
# keygen, a CURVE server from PATH, a Python env connecting with the keys from the environment
# (on loopback here; the recipe binds 0.0.0.0)
keys = os.path.abspath("keys")
os.makedirs(keys, exist_ok=True)
for who in ("server", "alice"):
    r = subprocess.run(["robosim-cli", "keygen", "--out", who], cwd=keys, env=path_env,
                       capture_output=True, text=True)
    check(r.returncode == 0, "robosim-cli keygen --out %s: %s" % (who, r.stderr))
with open(os.path.join(keys, "alice.key")) as f:
    alice = [line.split('"')[1] for line in f if line.strip().startswith("public-key")][0]
with open(os.path.join(keys, "authorized_keys"), "w") as f:
    f.write("%s controller\n" % alice)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
proc = subprocess.Popen(["robosim-server", "--bind", "tcp://127.0.0.1:%d" % port, "--no-stream",
                         "--curve-secret-file", "server.key_secret",
                         "--authorized-keys", "authorized_keys"], cwd=keys, env=path_env,
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
try:
    code = ("import gymnasium as gym, robosim, sys\n"
            "env = gym.make('robosim/FingerPush-v1', endpoint=sys.argv[1])\n"
            "print(env.reset(seed=0)[0]); env.close()\n")
    user_env = dict(path_env, ROBOSIM_SERVER_KEY=os.path.join(keys, "server.key"),
                    ROBOSIM_CLIENT_KEY_FILE=os.path.join(keys, "alice.key_secret"))
    deadline, r = time.monotonic() + 20, None
    while time.monotonic() < deadline:
        r = subprocess.run([sys.executable, "-c", code, "tcp://127.0.0.1:%d" % port],
                           env=user_env, capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            break
        time.sleep(0.5)
    check(r is not None and r.returncode == 0, "an env through CURVE: %s" % (r and r.stderr))
    # without alice's key the server answers nothing: the env fails
    r = subprocess.run([sys.executable, "-c", code, "tcp://127.0.0.1:%d" % port],
                       env=path_env, capture_output=True, text=True, timeout=120)
    check(r.returncode != 0, "a plaintext client was served by the CURVE server")
finally:
    proc.terminate()
    proc.wait(10)

# the README's first loop, every warning an error
with open(sys.argv[1]) as f:
    loop = f.read()
r = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-c",
                    "import warnings; warnings.simplefilter('error')\n" + loop],
                   capture_output=True, text=True, timeout=300)
check(r.returncode == 0 and "Warning" not in r.stderr, "the README's loop: %s" % r.stderr[-2000:])

# the example specifications are package data; MobileAlign-v1's baseline loads one
spec = robosim.example_spec("dual_arm_alignment.jsonld")
check(os.path.dirname(spec) == os.path.join(pkg, "data", "specs"), "example_spec gave %s" % spec)
check(set(robosim.example_spec_names()) >= {"dual_arm_alignment.jsonld", "single_arm.jsonld",
                                             "dual_arm_alignment_passive.jsonld"},
      "example specs: %s" % robosim.example_spec_names())
env = gym.make("robosim/MobileAlign-v1")
try:
    policy = robosim.baselines.auto(env)
    obs, _ = env.reset(seed=3)
    check(env.unwrapped.client.get_motion_spec(env.unwrapped.world_id)["loaded"],
          "the MobileAlign-v1 baseline loaded no specification")
    start = abs(obs[0])
    for _ in range(300):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        if terminated:
            break
    check(abs(obs[0]) < start, "MobileAlign-v1's baseline: heading error %g from %g"
          % (abs(obs[0]), start))
    os.chdir(os.path.dirname(os.path.abspath(__file__)))  # no examples/ here: package data
    env.unwrapped.client.load_motion_spec(env.unwrapped.world_id,
                                          path="examples/specs/single_arm.jsonld")
finally:
    env.close()

# RecordVideo with the video extra
import tempfile  # noqa: E402
videos = tempfile.mkdtemp()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # moviepy's own
    env = gym.wrappers.RecordVideo(gym.make("robosim/FingerPush-v1", render_mode="rgb_array"),
                                   videos, episode_trigger=lambda i: True, disable_logger=True)
    env.reset(seed=0)
    for _ in range(10):
        env.step(env.action_space.sample())
    env.close()
check([f for f in os.listdir(videos) if f.endswith(".mp4")], "RecordVideo wrote no MP4")

# typed: py.typed and the generated code's stub
for f in ("py.typed", os.path.join("_pb", "robosim_pb2.pyi")):
    check(os.path.isfile(os.path.join(pkg, f)), "%s missing from the wheel" % f)
from importlib.metadata import requires, version  # noqa: E402
# the distribution is robosim-gym (the index's robosim is another project); the import robosim
check(version("robosim-gym") == robosim.__version__,
      "robosim-gym %s, robosim.__version__ %s" % (version("robosim-gym"), robosim.__version__))
check(not [r for r in requires("robosim-gym") if "==" in r.split(";")[0]],
      "an exact pin: %s" % requires("robosim-gym"))

print("wheel smoke test ok: robosim %s from %s, server %s, 5 FingerPush-v1 steps, "
      "robosim-server and robosim-cli from PATH, a CURVE server as docs/python.md serves remote "
      "users, the README's loop, MobileAlign-v1's "
      "baseline, RecordVideo" % (robosim.__version__, pkg, server))
