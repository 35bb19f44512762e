#!/usr/bin/env python3
"""tests/arch/check_call_cycles.py NM OBJDIR [NAME]: no two files of a module
call each other, directly or round a longer loop (ARCHITECTURE.md: files
hold one concept, and concepts layer).

Reads every object file (*.o) under OBJDIR with NM (`nm -g`: the external
symbols each defines and those it leaves undefined), draws an edge from file
A to file B where A uses a symbol B defines, and reports every strongly
connected set of two or more files: one line each, its files and, for each
edge inside it, the symbols that make it. Static functions are the file's
own and draw no edge. NAME labels the report (default OBJDIR). Exits 1 on a
cycle."""
import os
import subprocess
import sys


def symbols(nm, path):
    out = subprocess.run([nm, '-g', path], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'U':
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in 'TDBRVWC':
            defined.add(parts[2])
    return defined, used


def cycles(graph):
    """Tarjan's strongly connected components of two or more nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def main():
    nm, objdir = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else objdir
    files = {}
    for dirpath, _, names in os.walk(objdir):
        for n in sorted(names):
            if n.endswith('.o'):
                files[n[:-len('.c.o')] if n.endswith('.c.o') else n[:-2]] = symbols(nm, os.path.join(dirpath, n))
    owner = {}
    for f, (defined, _) in files.items():
        for s in defined:
            owner[s] = f
    edges = {f: {} for f in files}
    for f, (_, used) in files.items():
        for s in used:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, []).append(s)
    graph = {f: set(e) for f, e in edges.items()}
    found = cycles(graph)
    for comp in found:
        inside = []
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    syms = sorted(edges[a][b])
                    more = f' +{len(syms) - 3}' if len(syms) > 3 else ''
                    inside.append(f'{a} -> {b} ({", ".join(syms[:3])}{more})')
        print(f'{name}: call cycle between {", ".join(comp)}: ' + '; '.join(inside))
    n_edges = sum(len(e) for e in graph.values())
    print(f'{name}: {len(files)} files, {n_edges} file-to-file calls, {len(found)} cycle(s)')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
