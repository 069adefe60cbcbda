"""The source layout (docs/layout.md) matches the tree: every path it names exists, every top-level
folder and file of the repository is in it, and every source file of server/core (the core's
files by concern) is named there."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def layout_block():
    with open(os.path.join(ROOT, "docs", "layout.md")) as f:
        text = f.read()
    section = text[text.index("# Source layout\n"):]
    return re.search(r"```\n(.*?)```", section, re.S).group(1)


def entries():
    """The paths the block starts its lines with (`server/core/`, `CMakeLists.txt`, ...)."""
    return [line.split()[0] for line in layout_block().splitlines()
            if line and not line[0].isspace()]


def test_named_paths_exist():
    for path in entries():
        assert os.path.exists(os.path.join(ROOT, path)), "the Layout names %s, absent" % path


def test_top_level_is_listed():
    listed = {p.split("/")[0] for p in entries()}
    ignored = {"build", "README.md"}  # the build tree; the README itself
    for name in os.listdir(ROOT):
        if name.startswith(".") or name in ignored:
            continue
        assert name in listed, "%s is in the tree but not in docs/layout.md" % name


def test_core_files_named():
    block = layout_block()
    core = os.path.join(ROOT, "server", "core")
    for name in os.listdir(core):
        if name.endswith(".c"):
            assert re.search(r"\b%s\b" % re.escape(name), block), \
                "server/core/%s is not named in docs/layout.md" % name
