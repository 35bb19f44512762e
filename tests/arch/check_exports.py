#!/usr/bin/env python3
"""check_exports.py LIBCOVENANT_SO INCLUDE_DIR [HEADER...]: libcovenant.so exports
exactly the functions that include/covenant/ declares with COV_API.

Both directions: a dynamic symbol that no public header declares is an
internal that leaked (a missing -fvisibility=hidden, or COV_API on an
internal); a declared function that the library does not export is an API
promise without a definition (or without COV_API). nm -D --defined-only is
the reference; the linker's own markers (_end, _edata, __bss_start, _init,
_fini) are not symbols of ours. HEADERs named after the include dir
(gpu.h in a build without LLVM) declare an API this build leaves out.
"""
import glob
import os
import re
import subprocess
import sys

LINKER = {'_end', '_edata', '__bss_start', '_init', '_fini'}


def declared(include_dir, without):
    names = {}
    for path in sorted(glob.glob(os.path.join(include_dir, 'covenant', '*.h'))):
        if os.path.basename(path) in without:
            continue
        text = re.sub(r'/\*.*?\*/', ' ', open(path).read(), flags=re.S)
        text = re.sub(r'^\s*#.*$', ' ', text, flags=re.M)
        # a COV_API declaration runs to its ';' ; its name precedes the first '('
        for m in re.finditer(r'\bCOV_API\b([^;{]*)', text):
            decl = m.group(1)
            name = re.search(r'(\w+)\s*\(', decl)
            if name:
                names[name.group(1)] = os.path.basename(path)
    return names


def main():
    lib, inc = sys.argv[1], sys.argv[2]
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True, check=True).stdout
    exported = {l.split()[-1] for l in out.splitlines() if l.strip()} - LINKER
    want = declared(inc, set(sys.argv[3:]))
    bad = 0
    for s in sorted(exported - set(want)):
        print(f"exported but not declared in include/covenant/: {s}")
        bad += 1
    for s in sorted(set(want) - exported):
        print(f"declared in include/covenant/{want[s]} but not exported: {s}")
        bad += 1
    print(f"{len(exported)} exported, {len(want)} declared with COV_API: {bad} difference(s)")
    return 1 if bad or not want else 0


if __name__ == '__main__':
    sys.exit(main())
