#!/usr/bin/env python3
"""scripts/protodoc.py PROTO OUT.md: the protocol reference, written from the comments of the
proto file (the one place the protocol is documented): the file's header, then each message and
enum with its comment and a table of its fields or values with theirs. scripts/docs runs it
before building the site; the page is generated, never committed."""
import re
import sys

FIELD = re.compile(r"^(repeated\s+|optional\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(\[[^\]]*\])?\s*;\s*(//\s?(.*))?$")
MAP = re.compile(r"^map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;\s*(//\s?(.*))?$")
VALUE = re.compile(r"^(\w+)\s*=\s*(-?\d+)\s*(\[[^\]]*\])?\s*;\s*(//\s?(.*))?$")
OPEN = re.compile(r"^(message|enum|oneof)\s+(\w+)\s*\{\s*(\}\s*)?(//\s?(.*))?$")


def cell(text):
    return " ".join(text.split()).replace("|", "\\|")


def anchor(name):
    return name.lower().replace(".", "")


def parse(lines):
    header, blocks, stack, comment = [], [], [], []
    seen_syntax = False
    last_row, trail_col = None, -1  # the row a trailing comment ended, and that comment's column
    for raw in lines:
        line = raw.strip()
        if line.startswith("//"):
            col = raw.index("//")
            if last_row is not None and col == trail_col:  # the trailing comment goes on
                row = last_row[0]
                row[3] = (row[3] + " " + line[2:].strip()).strip()
                continue
            last_row = None
            comment.append(line[2:].strip())
            continue
        last_row = None
        if not line:
            if not seen_syntax and comment:
                header.extend(comment + [""])
            comment = [] if seen_syntax else comment[:0]
            continue
        if line.startswith("syntax"):
            if comment:
                header.extend(comment)
            comment, seen_syntax = [], True
            continue
        if line.startswith(("package", "import", "option")):
            comment = []
            continue
        m = OPEN.match(line)
        if m:
            kind, name = m.group(1), m.group(2)
            doc = " ".join(comment + ([m.group(5)] if m.group(5) else []))
            if m.group(3):  # message X {}
                parents = [s["name"] for s in stack if s["kind"] != "oneof"]
                blocks.append({"kind": kind, "name": ".".join(parents + [name]), "doc": doc,
                               "rows": []})
                comment = []
                continue
            if kind == "oneof":
                stack.append({"kind": "oneof", "name": name, "block": stack[-1]["block"]})
                stack[-1]["block"]["rows"].append(["*oneof* `%s`" % name, "", "", doc])
            else:
                parents = [s["name"] for s in stack if s["kind"] != "oneof"]
                block = {"kind": kind, "name": ".".join(parents + [name]), "doc": doc, "rows": []}
                blocks.append(block)
                stack.append({"kind": kind, "name": name, "block": block})
            comment = []
            continue
        if line.startswith("}"):
            if stack:
                done = stack.pop()
                if comment and done["kind"] != "oneof":  # a closing note
                    done["block"]["doc"] = (done["block"]["doc"] + " " + " ".join(comment)).strip()
            comment = []
            continue
        if line.startswith("reserved"):
            comment = []
            continue
        if not stack:
            comment = []
            continue
        top = stack[-1]
        block = top["block"]
        prefix = "&nbsp;&nbsp;" if top["kind"] == "oneof" else ""
        if block["kind"] == "enum":
            m = VALUE.match(line)
            if m:
                doc = " ".join(comment + ([m.group(5)] if m.group(5) else []))
                block["rows"].append(["`%s`" % m.group(1), m.group(2), "", doc])
                if m.group(4):
                    last_row, trail_col = block["rows"][-1:], raw.index("//")
        else:
            m = FIELD.match(line)
            if m:
                label = (m.group(1) or "").strip()
                typ = ("%s %s" % (label, m.group(2))).strip()
                doc = " ".join(comment + ([m.group(7)] if m.group(7) else []))
                block["rows"].append([prefix + "`%s`" % m.group(3), m.group(4), "`%s`" % typ, doc])
                if m.group(6):
                    last_row, trail_col = block["rows"][-1:], raw.index("//")
            else:
                m = MAP.match(line)
                if m:
                    doc = " ".join(comment + ([m.group(6)] if m.group(6) else []))
                    block["rows"].append([prefix + "`%s`" % m.group(3), m.group(4),
                                          "`map<%s, %s>`" % (m.group(1), m.group(2)), doc])
                    if m.group(5):
                        last_row, trail_col = block["rows"][-1:], raw.index("//")
        comment = []
    return header, blocks


def render(proto_path, header, blocks):
    out = ["# Protocol reference", "",
           "Generated by `scripts/protodoc.py` from the comments of `%s`, the only source of "
           "the protocol's message types. The [protocol](protocol.md) page explains it in "
           "prose; the [changelog](changelog.md) has its version history." % proto_path, ""]
    out += [line for line in header] + [""]
    out += ["## Contents", ""]
    for kind in ("message", "enum"):
        names = [b["name"] for b in blocks if b["kind"] == kind]
        out.append("**%ss:** " % kind.capitalize() + ", ".join(
            "[%s](#%s)" % (n, anchor(n)) for n in names))
        out.append("")
    names = {b["name"] for b in blocks}

    def typed(t):  # a message or enum type of this file links to its section
        words = t.strip("`").split(" ")
        if words[-1] in names:
            words[-1] = "[%s](#%s)" % (words[-1], anchor(words[-1]))
            return " ".join(words)
        return t
    for b in blocks:
        for r in b["rows"]:
            r[2] = typed(r[2]) if r[2] else r[2]
        out += ["## %s" % b["name"], ""]
        if b["doc"]:
            out += [b["doc"], ""]
        if b["rows"]:
            if b["kind"] == "enum":
                out += ["| value | number | meaning |", "|---|---|---|"]
                out += ["| %s | %s | %s |" % (r[0], r[1], cell(r[3])) for r in b["rows"]]
            else:
                out += ["| field | number | type | meaning |", "|---|---|---|---|"]
                out += ["| %s | %s | %s | %s |" % (r[0], r[1], r[2], cell(r[3]))
                        for r in b["rows"]]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scripts/protodoc.py PROTO OUT.md")
    with open(sys.argv[1]) as f:
        header, blocks = parse(f.read().splitlines())
    if not blocks:
        sys.exit("protodoc: no message or enum in %s" % sys.argv[1])
    with open(sys.argv[2], "w") as f:
        f.write(render(sys.argv[1], header, blocks))


if __name__ == "__main__":
    main()
