#!/usr/bin/env python3
"""The recipe check: docs/design.md's recipes followed in a scratch copy of the source tree.

For each recipe in RECIPES, the change a contributor following it would make (a patch file
beside this script) is applied to the copy, and the files it changed must all be among those the
recipe's "Files it touches:" line names (NAME standing for any name). Then the recipes' common
last step runs as they say, `scripts/golden --update` (a release build of test_golden in the
copy), and the golden corpus may only have gained the new scenarios' lines: every existing
digest must be unchanged, since each scenario is seeded from its own name. Last, the tests a
recipe names run in the copy's release build.

Usage: tests/recipes/check_recipes.py [--keep]  (--keep leaves the scratch copy for a look)
Registered in ctest as recipes.check_recipes. Exits 1 naming every failed check.

The operation recipe's patch adds GetClock (a world's time and control steps): the proto's
messages on a reserved number, the handler, its row, its worst input in test_envelope.c and its
own test; then the server is built and the tests that read the op table run against it: its
own, the bad-input rows generated from the table (test_bad_inputs) and every operation by name
(test_ops_by_name).
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# section of docs/design.md, the patch following it, the golden scenarios it adds, the build
# targets and the programs (in build/release/bin) it checks with
RECIPES = [
    {
        "section": "How to add a preset",
        "patch": "preset.patch",
        "golden_new": {"preset_finger_heavy_object"},
        "targets": [],
        "tests": [],
    },
    {
        "section": "How to add a task family",
        "patch": "task_family.patch",
        "golden_new": {"task_FingerHold-v0"},
        "targets": ["test_tasks"],
        "tests": ["test_tasks"],
    },
    {
        "section": "How to add an operation",
        "patch": "operation.patch",
        "golden_new": set(),
        "targets": ["robosim-server", "test_get_clock", "test_bad_inputs", "test_ops_by_name"],
        "tests": ["test_get_clock", "test_bad_inputs", "test_ops_by_name"],
        "server": True,  # the tests take the copy's robosim-server
    },
]

SKIP_DIRS = {".git", ".deps", ".venv", "build"}
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def run(cmd, cwd, what):
    """Run cmd in cwd; its output is shown only when it fails. Returns whether it succeeded."""
    p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        fail("%s: `%s` exited %d:\n%s" % (what, " ".join(cmd), p.returncode, p.stdout[-4000:]))
    return p.returncode == 0


def source_files(root):
    """The tree's files: what git tracks and the untracked files it does not ignore."""
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                             check=True, stdout=subprocess.PIPE).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]
    return [f for f in files if f.split("/")[0] not in SKIP_DIRS
            and os.path.isfile(os.path.join(root, f))]


def snapshot(tree):
    """path -> sha256 of every file under tree, but the build, dependency and git folders."""
    out = {}
    for d, dirs, files in os.walk(tree):
        if d == tree:
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            path = os.path.join(d, f)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, tree)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def changed(before, after):
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def named_files(design, section):
    """The patterns of the files a recipe names on its "Files it touches:" line(s), NAME
    standing for any name."""
    m = re.search(r"^## %s\n(.*?)(?=^## )" % re.escape(section), design, re.S | re.M)
    if not m:
        fail("docs/design.md has no section '## %s'" % section)
        return []
    files = re.search(r"^Files it touches: (.*?)(?:\n\n|\Z)", m.group(1), re.S | re.M)
    if not files:
        fail("'%s' names no files ('Files it touches: ...')" % section)
        return []
    paths = re.findall(r"`([^`]+)`", files.group(1))
    return [(p, re.compile(re.escape(p).replace("NAME", "[A-Za-z0-9_]+").replace(
        r"handlers_\*", r"handlers_[a-z_]+") + r"\Z")) for p in paths]


def golden(path):
    lines = {}
    with open(path) as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                name, digest = line.split()
                lines[name] = digest
    return lines


def main():
    keep = "--keep" in sys.argv[1:]
    scratch = tempfile.mkdtemp(prefix="robosim-recipes.")
    print("recipes: copying the tree to %s" % scratch, flush=True)
    for f in source_files(ROOT):
        os.makedirs(os.path.dirname(os.path.join(scratch, f)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(scratch, f))
    deps = os.path.realpath(os.path.join(ROOT, ".deps"))
    if os.path.isdir(deps):
        os.symlink(deps, os.path.join(scratch, ".deps"))  # SUNDIALS, as scripts/install built it
    with open(os.path.join(scratch, "docs", "design.md")) as fh:
        design = fh.read()
    corpus = os.path.join("tests", "golden", "digests.txt")
    old_golden = golden(os.path.join(scratch, corpus))

    allowed = []
    before = snapshot(scratch)
    for r in RECIPES:
        named = named_files(design, r["section"])
        allowed += named
        if not run(["git", "apply", "-C1", os.path.join(HERE, r["patch"])], scratch,
                   "%s: applying %s (regenerate it if the files it edits moved on)"
                   % (r["section"], r["patch"])):
            continue
        after = snapshot(scratch)
        touched = changed(before, after)
        for path in touched:
            if not any(rx.match(path) for _, rx in named):
                fail("%s: the change touches %s, which the recipe does not name (it names: %s)"
                     % (r["section"], path, ", ".join(p for p, _ in named)))
        print("recipes: %s: %s (named: %s)" % (r["section"], ", ".join(touched),
                                               ", ".join(p for p, _ in named)), flush=True)
        before = after

    print("recipes: scripts/golden --update (a release build of test_golden)", flush=True)
    if run(["scripts/golden", "--update"], scratch, "scripts/golden --update"):
        after = snapshot(scratch)
        for path in changed(before, after):
            if not any(rx.match(path) for _, rx in allowed):
                fail("scripts/golden --update changed %s, which no recipe names" % path)
        new_golden = golden(os.path.join(scratch, corpus))
        for name, digest in sorted(old_golden.items()):
            if name not in new_golden:
                fail("golden scenario %s is gone after adding the recipes' items" % name)
            elif new_golden[name] != digest:
                fail("golden scenario %s changed (%s -> %s): adding a preset or a task must not "
                     "change another scenario's digest" % (name, digest, new_golden[name]))
        want = set().union(*(r["golden_new"] for r in RECIPES))
        got = set(new_golden) - set(old_golden)
        if got != want:
            fail("the golden corpus gained %s, expected %s" % (sorted(got), sorted(want)))
        same = sum(new_golden.get(name) == digest for name, digest in old_golden.items())
        print("recipes: golden corpus: %d of %d scenarios unchanged, %d added (%s)"
              % (same, len(old_golden), len(got), ", ".join(sorted(got))), flush=True)

    targets = [t for r in RECIPES for t in r["targets"]]
    if targets and run(["cmake", "--build", "build/release", "-j%d" % (os.cpu_count() or 1),
                        "--target"] + targets, scratch, "building " + " ".join(targets)):
        for r in RECIPES:
            for t in r["tests"]:
                print("recipes: %s: %s" % (r["section"], t), flush=True)
                bindir = os.path.join(scratch, "build", "release", "bin")
                args = [os.path.join(bindir, "robosim-server")] if r.get("server") else []
                run([os.path.join(bindir, t)] + args, scratch, "%s: %s" % (r["section"], t))

    if keep:
        print("recipes: the scratch copy stays in %s" % scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("recipes: %d check(s) failed" % len(failures))
        return 1
    print("recipes: %d recipes followed; each touched only the files it names, no golden "
          "digest changed, and their tests passed" % len(RECIPES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
