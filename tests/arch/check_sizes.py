#!/usr/bin/env python3
"""check_sizes.py ROOT [--list]: files by concept, functions by one idea.

Scans every .c file of the modules of cmake/modules.txt (the CLI included,
tests not) for files over 900 lines and functions over 100 lines (from the
line of the name to the closing brace; a brace-matching scan that skips
comments, strings and initializers). Each needs a reason written near the
top of its file, in the first comment:
    size: why this file holds more than 900 lines
    long: FUNCTION why it stays longer than 100 lines
and a reason that no longer applies (the file or function got shorter, or
is gone) fails too, so the list only shrinks. A reason says why the code,
as it is, stays long; one that points to future work ("in progress",
"until ... lands", "later", "for now", "TODO") is no reason and fails.
--list prints every long file and function with its length, reasons or not.
Exit 0: clean; 1: problems (FILE:LINE: ...); 2: bad usage.
"""
import re
import sys

from c_sources import blank, sources

FILE_MAX = 900
FUNC_MAX = 100
HEAD_LINES = 60  # where reasons are looked for
NAME = re.compile(r'([A-Za-z_]\w*)\s*\($')
FUTURE = re.compile(r'in progress|\buntil\b|\blands?\b|\blater\b|for now|\btodo\b|\bfixme\b|'
                    r'\bwill be\b|\bnext (session|step)\b', re.I)


def functions(src):
    """(name, first line, last line) of every function definition."""
    s = blank(src)
    depth, start, res = 0, 0, []
    i = 0
    while i < len(s):
        c = s[i]
        if c == '{':
            if depth == 0:
                head = s[start:i]
                # a definition: NAME(...) then '{' (not "= {", struct, enum)
                h = head.rstrip()
                if h.endswith(')') and '=' not in h.split('(')[0]:
                    # find the '(' that matches the last ')'
                    d, k = 0, len(h) - 1
                    while k >= 0:
                        if h[k] == ')':
                            d += 1
                        elif h[k] == '(':
                            d -= 1
                            if d == 0:
                                break
                        k -= 1
                    m = NAME.search(h[:k + 1])
                    if m and m.group(1) not in ('if', 'for', 'while', 'switch', 'sizeof'):
                        first = s.count('\n', 0, start + m.start()) + 1
                        res.append([m.group(1), first, i])
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                if res and isinstance(res[-1][2], int) and res[-1][2] >= start and len(res[-1]) == 3:
                    res[-1].append(s.count('\n', 0, i) + 1)
                start = i + 1
        elif c == ';' and depth == 0:
            start = i + 1
        i += 1
    return [(r[0], r[1], r[3]) for r in res if len(r) == 4]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    root, listing = args[0], '--list' in sys.argv
    errors, n_files, long_files, long_funcs = [], 0, 0, 0
    for rel, src in sources(root, ('.c',)):
        n_files += 1
        lines = src.count('\n')
        head = src.split('\n')[:HEAD_LINES]
        size_why = [k + 1 for k, l in enumerate(head) if re.search(r'\bsize:\s*\S', l)]
        long_why = {}
        for k, l in enumerate(head):
            m = re.search(r'\b(long:\s*(\w+)|size:)\s+(\S.*)', l)
            if not m:
                continue
            if m.group(2):
                long_why[m.group(2)] = k + 1
            f = FUTURE.search(m.group(3))
            if f:
                what = f"'long: {m.group(2)}'" if m.group(2) else "'size:'"
                errors.append(f"{rel}:{k + 1}: the {what} reason points to future work "
                              f"('{f.group(0)}'): split the code, or say why it stays long as it is")
        if lines > FILE_MAX:
            long_files += 1
            if listing:
                print(f"{rel}: {lines} lines{' (reason given)' if size_why else ''}")
            if not size_why:
                errors.append(f"{rel}:1: {lines} lines (over {FILE_MAX}): split it by concept or "
                              f"write why at its top ('size: ...')")
        elif size_why:
            errors.append(f"{rel}:{size_why[0]}: a 'size:' reason, but the file has {lines} lines "
                          f"(at most {FILE_MAX}): remove it")
        seen = set()
        for fn, first, last in functions(src):
            n = last - first + 1
            if n <= FUNC_MAX:
                continue
            long_funcs += 1
            seen.add(fn)
            if listing:
                print(f"{rel}:{first}: {fn} {n} lines{' (reason given)' if fn in long_why else ''}")
            if fn not in long_why:
                errors.append(f"{rel}:{first}: {fn} has {n} lines (over {FUNC_MAX}): shorten it "
                              f"where a concept hides inside, or write why at the file's top "
                              f"('long: {fn} ...')")
        for fn, k in long_why.items():
            if fn not in seen:
                errors.append(f"{rel}:{k}: a 'long: {fn}' reason, but {fn} is not over "
                              f"{FUNC_MAX} lines (or is gone): remove it")
    for e in errors:
        print(e)
    print(f"check_sizes: {n_files} files, {long_files} over {FILE_MAX} lines, "
          f"{long_funcs} functions over {FUNC_MAX} lines, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
