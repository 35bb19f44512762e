#!/usr/bin/env python3
"""check_includes.py ROOT [MODULES [ALLOW]]: the include-boundary check.

Reads the module graph (cmake/modules.txt: each module's directory, the
modules it depends on and the headers it exports; the same file CMake builds
the libraries from) and every #include of every library file (.c and .h
under a module's directory). A file may include public headers
(covenant/...), headers of its own module, and the exported headers of the
modules its module declares as direct dependencies. Anything else is a
violation, unless cmake/include_allow.txt lists that very include (with the
issue that removes it); an allow-list entry that no longer matches is a
violation too, so the list only shrinks. Also fails on an undeclared
dependency, a cycle, or an exported header that does not exist.

Exit 0: clean; 1: violations, one line each (FILE:LINE: ...); 2: bad usage.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def read_table(path, ncols):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            cols = line.split()
            if len(cols) < ncols:
                sys.exit(f"{path}:{n}: expected {ncols} columns, got {len(cols)}")
            rows.append((n, cols))
    return rows


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    modules_file = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, 'cmake/modules.txt')
    allow_file = sys.argv[3] if len(sys.argv) > 3 else os.path.join(root, 'cmake/include_allow.txt')
    errors = []
    mods = {}
    for n, c in read_table(modules_file, 5):
        name, mdir, deps, hdrs = c[0], c[1].rstrip('/'), c[2], c[3]
        mods[name] = dict(dir=mdir, line=n,
                          deps=[] if deps == '-' else deps.split(','),
                          hdrs=None if hdrs == '*' else ([] if hdrs == '-' else hdrs.split(',')))
    allow = {}
    if os.path.exists(allow_file):
        for n, c in read_table(allow_file, 3):
            allow[(c[0], c[1])] = [n, c[2], False]

    # the graph itself: known modules, no cycles, exported headers exist
    for m, d in mods.items():
        for dep in d['deps']:
            if dep not in mods:
                errors.append(f"{modules_file}:{d['line']}: {m} depends on unknown module '{dep}'")
        for h in d['hdrs'] or []:
            if not os.path.isfile(os.path.join(root, d['dir'], h)):
                errors.append(f"{modules_file}:{d['line']}: {m} exports {h}, which does not exist")
    state = {}

    def visit(m, stack):
        if state.get(m) == 'done':
            return
        if state.get(m) == 'open':
            cyc = stack[stack.index(m):] + [m]
            errors.append(f"{modules_file}: dependency cycle: {' -> '.join(cyc)}")
            return
        state[m] = 'open'
        for dep in mods[m]['deps']:
            if dep in mods:
                visit(dep, stack + [m])
        state[m] = 'done'
    for m in mods:
        visit(m, [])

    # every include of every library file
    by_dir = sorted(((d['dir'], m) for m, d in mods.items()), key=lambda x: -len(x[0]))

    def owner(path):
        for mdir, m in by_dir:
            if path.startswith(mdir + '/'):
                return m, path[len(mdir) + 1:]
        return None, None

    n_files = n_includes = 0
    for m, d in sorted(mods.items()):
        top = os.path.join(root, d['dir'])
        for dirpath, dirnames, filenames in os.walk(top):
            rel_dir = os.path.relpath(dirpath, root)
            # a subdirectory that is another module's is checked as that module
            dirnames[:] = sorted(x for x in dirnames if owner(os.path.join(rel_dir, x) + '/x')[0] == m)
            for fn in sorted(filenames):
                if not fn.endswith(('.c', '.h')):
                    continue
                rel = os.path.join(rel_dir, fn)
                n_files += 1
                with open(os.path.join(dirpath, fn), errors='replace') as f:
                    for ln, line in enumerate(f, 1):
                        mt = INCLUDE.match(line)
                        if not mt:
                            continue
                        inc = mt.group(1)
                        n_includes += 1
                        if inc.startswith('covenant/') or '..' in inc.split('/'):
                            if '..' in inc.split('/'):
                                errors.append(f"{rel}:{ln}: includes {inc}: name headers from the repository root")
                            continue
                        om, hdr = owner(inc)
                        if om is None or om == m:
                            continue
                        why = None
                        if om not in d['deps']:
                            why = f"module {om}, which {m} does not depend on"
                        elif mods[om]['hdrs'] is not None and hdr not in mods[om]['hdrs']:
                            why = f"a header internal to {om} (not among its exported headers)"
                        if why is None:
                            continue
                        a = allow.get((rel, inc))
                        if a:
                            a[2] = True
                            continue
                        errors.append(f"{rel}:{ln}: includes {inc}, {why} (cmake/modules.txt)")
    for (rel, inc), (n, issue, used) in sorted(allow.items()):
        if not used:
            errors.append(f"{allow_file}:{n}: {rel} no longer needs {inc} (allowed until {issue}): remove the entry")
    for e in errors:
        print(e)
    print(f"{n_files} files, {n_includes} includes, {len(mods)} modules, "
          f"{len(allow)} allowed crossing(s): {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
