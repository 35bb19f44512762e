#!/usr/bin/env python3
"""tests/arch/check_backend_names.py ROOT [MODULES]: nothing outside
backends/ knows a backend (ARCHITECTURE.md, "The compiler knows no target by
name"; backends/registry/backend_registry.h).

Every C file of every module of MODULES (cmake/modules.txt), the CLI
included, is read with its comments blanked (tests/arch/c_sources.py),
except backend code: backends/, and runtime/devices/, the runtime's part of
the backends (the table pairing backend names with devices, and the
simulator's device), which the LLVM-free runtime compiles with the rest of
it. A line is a violation when it
  - includes a backend's header: anything under backends/ but the
    registry's interface (backends/registry/: backend_registry.h and the
    interfaces built on it, backend_ops.h) (header);
  - calls a backend's public API, cov_npu_* or cov_gpu_* (api);
  - names a backend: npu-sim, nvptx or amdgpu as a word of its code or of a
    string (a target's name, nvptx-sm90, or a path, backends/npu-sim/, is
    not one) (name);
  - names a backend's internal symbol: npu_*, gpu_*, amdgpu_*, nvptx_*
    (symbol);
  - branches on a backend's kind: a row's GPU vendor (.gpu, ->gpu), a
    comparison of a backend's name (strcmp with cov_acg_backend(), a row's
    name or BACKEND_REF), an is_gpu / is_npu test (kind).
There is no allow-list: code that must know a backend lives in backend
code. Exits 1 on a violation, naming file, line, rule and the code."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import c_sources  # noqa: E402

REGISTRY_DIR = 'backends/registry/'
BACKEND_CODE = ('backends/', 'runtime/devices/')
RULES = [
    ('header', re.compile(r'#\s*include\s*"(backends/[^"]*)"'), 'includes a backend\'s header'),
    ('api', re.compile(r'\bcov_(?:npu|gpu)_\w+'), 'calls a backend\'s API directly'),
    ('name', re.compile(r'(?<![\w/.-])(?:npu-sim|nvptx|amdgpu)(?![\w/-])'), 'names a backend'),
    ('symbol', re.compile(r'(?<![\w])(?:npu|gpu|amdgpu|nvptx)_\w+'), 'names a backend\'s internal symbol'),
    ('kind', re.compile(r'(?:\.|->)gpu\b|\bstrn?cmp\s*\([^;]*(?:cov_acg_backend\s*\(|backend->name|BACKEND_REF)'
                        r'|\b\w*is_(?:gpu|npu)\b'), 'branches on a backend\'s kind'),
]


def file_violations(rel, src):
    code = c_sources.blank(src, strings=False)  # comments out, strings kept
    bare = c_sources.blank(src, strings=True)   # strings out as well
    found = []
    for n, (line, bare_line) in enumerate(zip(code.split('\n'), bare.split('\n')), 1):
        for rule, rx, what in RULES:
            # includes and names are read with their strings, symbols and
            # branches on the code alone
            text = line if rule in ('header', 'name', 'kind') else bare_line
            for m in rx.finditer(text):
                if rule == 'header' and m.group(1).startswith(REGISTRY_DIR):
                    continue
                found.append((n, rule, what, m.group(0)))
                break
    return found


def main():
    root = sys.argv[1]
    modules = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, 'cmake/modules.txt')
    dirs = [d for d in c_sources.module_dirs(root, modules=modules) if not (d + '/').startswith(BACKEND_CODE)]
    errors, files = [], 0
    for d in dirs:
        for rel, src in c_sources.sources(root, ('.c', '.h'), dirs=[d], modules=modules):
            if rel.startswith(BACKEND_CODE):
                continue
            files += 1
            for n, rule, what, text in file_violations(rel, src):
                errors.append(f'{rel}:{n}: {rule}: {what}: {text}')
    for e in errors:
        print(e)
    print(f'{files} files in {len(dirs)} modules outside backend code: {len(errors)} violation(s)')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
