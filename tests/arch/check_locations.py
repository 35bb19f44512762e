#!/usr/bin/env python3
"""check_locations.py ROOT [ALLOW]: every library error carries an input location.

Scans the library modules of cmake/modules.txt (not cli/, not tests) for
cov_error(CODE, WHERE, ...) and fails where WHERE is a literal NULL or 0: a
diagnostic must say which file (model, suite, ACG, codelet) and which node,
layer or JSON path it is about. Two kinds need none, and pass:
  - COV_OUT_OF_MEMORY: the machine ran out, not the input;
  - a call listed in cmake/location_allow.txt (FILE CODE REASON), which must
    stay tiny; an entry that no longer matches fails too, so it only shrinks.
Exit 0: clean; 1: violations (FILE:LINE: ...); 2: bad usage.
"""
import os
import re
import sys

from c_sources import blank, sources

CALL = re.compile(r'\bcov_error\s*\(')


def args_of(src, start):
    """The top-level arguments of the call whose '(' is at start."""
    depth, args, cur, i = 0, [], [], start
    while i < len(src):
        c = src[i]
        if c in '"\'':
            j = i + 1
            while j < len(src) and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            cur.append(src[i:j + 1])
            i = j + 1
            continue
        if c in '([{':
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                args.append(''.join(cur).strip())
                return args
        elif c == ',' and depth == 1:
            args.append(''.join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    allow_file = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, 'cmake/location_allow.txt')
    allow = {}
    if os.path.exists(allow_file):
        with open(allow_file) as f:
            for n, line in enumerate(f, 1):
                cols = line.split('#', 1)[0].split(None, 2)
                if not cols:
                    continue
                if len(cols) < 3:
                    print(f"{allow_file}:{n}: expected FILE CODE REASON")
                    return 1
                allow[(cols[0], cols[1])] = [n, 0]
    errors, calls = [], 0
    for rel, text in sources(root, ('.c', '.h'), with_cli=False):
        src = blank(text, strings=False)
        for m in CALL.finditer(src):
            line = src.count('\n', 0, m.start()) + 1
            if src[:m.start()].rstrip().endswith('define'):
                continue  # the macro's own definition
            a = args_of(src, m.end() - 1)
            if len(a) < 2:
                continue
            calls += 1
            if a[1] not in ('NULL', '0', '((void *)0)'):
                continue
            if a[0] == 'COV_OUT_OF_MEMORY':
                continue
            if (rel, a[0]) in allow:
                allow[(rel, a[0])][1] += 1
                continue
            errors.append(f"{rel}:{line}: cov_error({a[0]}, {a[1]}, ...) has no input location")
    for (rel, code), (n, used) in sorted(allow.items()):
        if not used:
            errors.append(f"{allow_file}:{n}: allow-list entry {rel} {code} matches nothing: remove it")
    for e in errors:
        print(e)
    print(f"check_locations: {calls} cov_error calls, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
