#!/usr/bin/env python3
"""check_doc_graph.py ROOT: ARCHITECTURE.md draws the module graph the build declares.

Reads the graph block under "## Modules as the build declares them" in
ARCHITECTURE.md (lines "module ──► dep, dep, ...", two to a line at most)
and cmake/modules.txt, and fails unless every module with dependencies is
drawn once with exactly its direct dependencies (order free), and unless
ARCHITECTURE.md stays short (at most 200 lines: detail belongs in the
modules' own documents).
Exit 0: they agree; 1: differences, one line each.
"""
import os
import re
import sys

MAX_LINES = 200
ARROW = re.compile(r'([\w-]+)\s*─*►\s*([\w-]+(?:,\s*[\w-]+)*)')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    declared = {}
    with open(os.path.join(root, 'cmake/modules.txt')) as f:
        for line in f:
            cols = line.split('#', 1)[0].split()
            if len(cols) >= 3 and cols[2] != '-':
                declared[cols[0]] = set(cols[2].split(','))
    text = open(os.path.join(root, 'ARCHITECTURE.md')).read()
    n_lines = text.count('\n')
    if n_lines > MAX_LINES:
        print(f'ARCHITECTURE.md: {n_lines} lines (at most {MAX_LINES}): move detail to the modules\' documents')
        return 1
    sec = text.split('## Modules as the build declares them', 1)
    if len(sec) < 2 or '```' not in sec[1]:
        print('ARCHITECTURE.md: no graph block under "## Modules as the build declares them"')
        return 1
    block = sec[1].split('```', 2)[1]
    drawn, errors = {}, []
    for line in block.splitlines():
        for m in ARROW.finditer(line):
            name = m.group(1)
            if name in drawn:
                errors.append(f"ARCHITECTURE.md: {name} is drawn twice")
            drawn[name] = set(d.strip() for d in m.group(2).split(','))
    for name in sorted(set(declared) | set(drawn)):
        want, got = declared.get(name), drawn.get(name)
        if want is None:
            errors.append(f"ARCHITECTURE.md: {name} is drawn but cmake/modules.txt gives it no dependencies")
        elif got is None:
            errors.append(f"ARCHITECTURE.md: {name} (depends on {', '.join(sorted(want))}) is not drawn")
        elif want != got:
            errors.append(f"ARCHITECTURE.md: {name} is drawn with {', '.join(sorted(got))}; "
                          f"cmake/modules.txt says {', '.join(sorted(want))}")
    for e in errors:
        print(e)
    print(f"check_doc_graph: {len(declared)} modules with dependencies, {len(errors)} differences")
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
