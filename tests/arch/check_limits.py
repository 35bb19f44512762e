#!/usr/bin/env python3
"""LIMITS.md against the code, so the table cannot drift.

    check_limits.py ROOT [LIMITS.md]

For each row of LIMITS.md's tables:
  - the constant's `#define` is found in the file the row names, its
    expression evaluated (other constants it uses looked up in the sources)
    and compared with the row's value ("2 GiB", "2^24", "16384", "6.4e7");
  - each "file: function" the row names exists, and the function's body
    uses the constant (or calls the function that does, where the row says
    "(used by ...)" or "(through ...)": the first name is what is checked).
And every limit constant of the sources, a `#define` whose name contains MAX
and ends in one of LIMIT_SUFFIXES, must have a row.
Exit 1 with one line per problem.
"""
import os
import re
import sys

LIMIT_SUFFIXES = ("_NODES", "_EDGES", "_BYTES", "_INSNS", "_DESIGNS", "_ITEMS", "_STEPS",
                  "_CODELETS", "_STMTS", "_TENSORS", "_SEGMENTS", "_DEPTH", "_FILES", "_CAPS",
                  "_VALUES", "_VARY", "_ERRORS", "_MEMORY", "_HEADER", "_CAPACITY")
SOURCE_DIRS = ("acg", "codelets", "common", "frontend", "mapper", "backends", "runtime", "explore",
               "cli", "include")
# Limit-looking constants that bound no input: sizes of fixed internal
# arrays, documented where they are defined.
NOT_INPUT_LIMITS = {
    "MAP_GPU_MAX_SHAPES", "MAP_SUITE_MAX_POST", "COV_EDIT_MAX_NAME", "COMMON_MAX_DATA_NAMES",
    "CDL_MAX_DECLS", "CDL_MAX_OPERANDS", "MAP_MAX_OPERANDS", "TUNE_MAX_ELEMS", "MAX_DESIGN_FIELDS",
}

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def sources(root):
    for d in SOURCE_DIRS:
        for dp, _, fs in os.walk(os.path.join(root, d)):
            for f in fs:
                if f.endswith((".c", ".h")):
                    yield os.path.join(dp, f)


def defines(root):
    """name -> (path relative to root, expression) for every #define."""
    out = {}
    for p in sources(root):
        text = open(p, encoding="utf-8", errors="replace").read()
        for m in re.finditer(r"^#define\s+([A-Z_][A-Z0-9_]*)[ \t]+(.+?)\s*(?:/\*.*)?$", text, re.M):
            out.setdefault(m.group(1), (os.path.relpath(p, root), m.group(2).strip()))
    return out


def evaluate(expr, defs, depth=0):
    """A #define's value: integer or float constant expressions with casts,
    UINT64_C, integer suffixes and other constants."""
    if depth > 8:
        raise ValueError("constants nest too deep")
    e = re.sub(r"\((?:u?int\d+_t|size_t|double|float|unsigned(?: long)*|long(?: long)?)\)", "", expr)
    e = re.sub(r"U?INT\d+_C\(([^)]*)\)", r"(\1)", e)
    e = re.sub(r"(?<=[0-9])(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b", "", e)

    def name(m):
        n = m.group(0)
        if n not in defs:
            raise ValueError("unknown name %s" % n)
        return "(%r)" % evaluate(defs[n][1], defs, depth + 1)
    e = re.sub(r"\b[A-Z_][A-Z0-9_]+\b", name, e)
    if not re.fullmatch(r"[0-9a-fA-FxX.eE+\-*/<>() \t]*", e):
        raise ValueError("not a constant expression: %s" % expr)
    v = eval(e.replace("/", "//") if "." not in e and "e" not in e.lower().replace("0x", "") else e)
    return v


def parse_value(text):
    """The table's value: '2 GiB', '2^24', '1,000,000', '6.4e7', '65536 bytes',
    '2^50 bytes (1 PiB)', 'layers up to 6.4e7 operations', '2 GiB by default'."""
    t = text.replace(",", "")
    m = re.search(r"(\d+)\s*\^\s*(\d+)", t)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.search(r"(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|TiB|PiB)\b", t)
    if m:
        return int(float(m.group(1)) * UNITS[m.group(2)])
    m = re.search(r"\d+(?:\.\d+)?(?:e\d+)?", t)
    if m:
        s = m.group(0)
        return float(s) if ("." in s or "e" in s) else int(s)
    raise ValueError("no number in '%s'" % text)


def function_body(text, fn):
    """The body of function fn defined in text (from its header line to the
    closing brace in column 0), or None."""
    m = re.search(r"^[A-Za-z_][^;{}\n]*\b%s\([^;]*?\)\s*\{" % re.escape(fn), text, re.M)
    if not m:
        return None
    end = re.search(r"^\}", text[m.end():], re.M)
    return text[m.start():m.end() + (end.start() if end else len(text))]


def rows(limits_text):
    for line in limits_text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not line.startswith("|") or cells[0] in ("limit", "---"):
            continue
        m = re.match(r"`([A-Z_][A-Z0-9_]*)`\s*\(`([^`]+)`\)", cells[2])
        yield cells, m


def check(root, limits_path):
    defs = defines(root)
    problems = []
    named = set()
    text = open(limits_path, encoding="utf-8").read()
    for cells, m in rows(text):
        what = cells[0]
        if not m:
            problems.append("row '%s': the constant cell is not `NAME` (`file`)" % what)
            continue
        const, path = m.group(1), m.group(2)
        named.add(const)
        if const not in defs:
            problems.append("row '%s': no #define %s in the sources" % (what, const))
            continue
        if defs[const][0] != path:
            problems.append("row '%s': %s is defined in %s, not %s" % (what, const, defs[const][0], path))
        try:
            want, got = parse_value(cells[1]), evaluate(defs[const][1], defs)
        except (ValueError, SyntaxError) as e:
            problems.append("row '%s': %s" % (what, e))
            continue
        if abs(float(want) - float(got)) > 1e-9 * max(1.0, abs(float(got))):
            problems.append("row '%s': the table says %s (%r), %s is %s (%r) in %s" % (
                what, cells[1], want, const, defs[const][1], got, path))
        for loc in re.findall(r"`([\w./-]+\.c)`:\s*`(\w+)`", cells[3]):
            f, fn = loc
            p = os.path.join(root, f)
            if not os.path.exists(p):
                problems.append("row '%s': no file %s" % (what, f))
                continue
            body = function_body(open(p, encoding="utf-8", errors="replace").read(), fn)
            if body is None:
                problems.append("row '%s': no function %s in %s" % (what, fn, f))
            elif not re.search(r"\b%s\b" % const, body):
                problems.append("row '%s': %s (%s) does not use %s" % (what, fn, f, const))
        if not re.findall(r"`([\w./-]+\.c)`:\s*`(\w+)`", cells[3]):
            problems.append("row '%s': no `file.c`: `function` where it is enforced" % what)
    for name, (path, _) in sorted(defs.items()):
        if ("MAX" in name and name.endswith(LIMIT_SUFFIXES) and name not in named
                and name not in NOT_INPUT_LIMITS and not path.startswith("include/covenant/gpu")):
            problems.append("%s (%s) bounds an input but LIMITS.md has no row for it" % (name, path))
    return problems


def main():
    root = sys.argv[1]
    limits = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "LIMITS.md")
    problems = check(root, limits)
    for p in problems:
        print("LIMITS.md: " + p)
    if not problems:
        print("LIMITS.md: every row matches the code")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
