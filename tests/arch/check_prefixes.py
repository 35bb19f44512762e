#!/usr/bin/env python3
"""tests/arch/check_prefixes.py ROOT NM_OUTPUT [NM]: every external symbol of the
library carries its module's prefix (ARCHITECTURE.md's module table), and
`cov_` is the public API's alone.

NM_OUTPUT is `nm -A --defined-only` of the static library (ctest runs nm on
libcovenant.a into a file), or the library itself, then read with NM (default nm).
A symbol's module is the module of cmake/modules.txt whose directory holds
the object's source file (FILE.c.o -> the one FILE.c under the module
directories); an object with no such file is generated code (the build
tree's onnx.pb-c.c, protobuf-c's names) and is left alone. It passes where the name starts with the module's prefix
(PREFIXES below) or is a `cov_` name declared in include/covenant/ (the
public API, implemented in whichever module owns it). Prints FILE: SYMBOL:
why, per offending symbol; exit 0: clean, 1: problems, 2: bad usage."""
import os
import re
import subprocess
import sys

from c_sources import module_dirs

# module directory -> the prefixes of its external symbols
PREFIXES = {
    'common': ('common_',),
    'acg': ('acg_',),
    'codelets': ('cdl_',),
    'frontend': ('graph_', 'onnx_'),
    'mapper': ('map_',),
    'backends/npu-sim': ('npu_',),
    'backends/npu-sim/compile': ('npu_',),
    'runtime': ('crt_',),
    'backends/gpu': ('gpu_',),
    'backends/amdgpu': ('amdgpu_',),
    'backends/nvptx': ('nvptx_',),
    'backends/registry': ('backend_',),
    'explore': ('explore_',),
    'cli': ('cli_',),
}
TYPES = set('TDBRVWCGS')


def public_names(root):
    names = set()
    inc = os.path.join(root, 'include/covenant')
    for f in sorted(os.listdir(inc)) if os.path.isdir(inc) else []:
        if f.endswith('.h'):
            with open(os.path.join(inc, f)) as h:
                names.update(re.findall(r'\bcov_\w+', h.read()))
    return names


def source_of(root, dirs):
    """object base name (FILE.c.o) -> (module directory, source path)."""
    out = {}
    owned = sorted(dirs, key=len, reverse=True)
    for d in dirs:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            rel = os.path.relpath(dirpath, root)
            mod = next(m for m in owned if rel == m or rel.startswith(m + '/'))
            for f in files:
                if f.endswith('.c'):
                    out.setdefault(f + '.o', (mod, os.path.join(rel, f)))
    return out


def nm_lines(arg, nm):
    if arg.endswith('.a'):
        return subprocess.run([nm, '-A', '--defined-only', arg], check=True, capture_output=True,
                              text=True).stdout.splitlines()
    with open(arg) as f:
        return f.read().splitlines()


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    root, nm_arg = sys.argv[1], sys.argv[2]
    dirs = module_dirs(root)
    objs, public = source_of(root, dirs), public_names(root)
    problems, n = [], 0
    for line in nm_lines(nm_arg, sys.argv[3] if len(sys.argv) == 4 else 'nm'):
        # LIB.a:FILE.c.o:ADDRESS TYPE NAME
        m = re.match(r'^(?:.*?\.a:)?([^:]+\.o):\S*\s+([A-Za-z])\s+(\S+)$', line)
        if not m or m.group(2) not in TYPES:
            continue
        obj, name = m.group(1), m.group(3)
        n += 1
        if obj not in objs:
            continue  # generated in the build tree (onnx.pb-c.c: protobuf-c's names)
        mod, path = objs[obj]
        prefixes = PREFIXES.get(mod)
        if prefixes is None:
            problems.append(f'{path}: {name}: module directory {mod} has no prefix in check_prefixes.py')
        elif name.startswith('cov_'):
            if name not in public:
                problems.append(f'{path}: {name}: the public prefix cov_ on a name include/covenant/ '
                                f'does not declare (use {prefixes[0]})')
        elif not name.startswith(prefixes):
            problems.append(f'{path}: {name}: not prefixed {" or ".join(prefixes)}')
    for p in sorted(problems):
        print(p)
    print(f'check_prefixes: {n} symbols, {len(problems)} problems', file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
