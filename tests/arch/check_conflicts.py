#!/usr/bin/env python3
"""check_conflicts.py ROOT: no merge-conflict markers in the tree.

A merge whose conflict was committed unresolved leaves git's markers in a
file; in a README that reads as two competing texts, in code it may not
even fail to build (a marker inside a comment or a string). Scans every
text file under ROOT (build trees, .git and binary files skipped) for a
line that starts with git's opening or closing marker followed by a space
or the end of the line ("=======" alone is also a setext heading
underline in Markdown, so it is not searched for). In a git work tree the
files are git's (tracked and not ignored: what a commit can carry), so
scratch output and fuzz corpora do not count; elsewhere every file.
Exit 0: clean; 1: markers found (FILE:LINE: ...); 2: bad usage.
"""
import os
import re
import subprocess
import sys

MARKER = re.compile(rb'^(<{7}|>{7})( |$)')
SKIP_DIRS = {'.git', 'node_modules', '__pycache__'}


def git_files(root):
    """Tracked and untracked-but-not-ignored files, or None outside git."""
    if not os.path.exists(os.path.join(root, '.git')):
        return None
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--cached', '--others',
                              '--exclude-standard'], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted(set(f.decode() for f in out.split(b'\0') if f))


def read_text(path):
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    with open(path, 'rb') as f:
        data = f.read()
    return None if b'\0' in data[:8192] else data  # binary: ONNX models, .npy


def text_files(root):
    listed = git_files(root)
    if listed is not None:
        for rel in listed:
            data = read_text(os.path.join(root, rel))
            if data is not None:
                yield os.path.join(root, rel), data
        return
    for dirpath, dirnames, filenames in os.walk(root):
        # build trees: build/, build-asan/, build-h100-*/ ...
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith('build'))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            data = read_text(path)
            if data is not None:
                yield path, data


def main(argv):
    if len(argv) != 2:
        print('usage: check_conflicts.py ROOT', file=sys.stderr)
        return 2
    root = argv[1]
    bad = 0
    for path, data in text_files(root):
        for no, line in enumerate(data.split(b'\n'), 1):
            if MARKER.match(line):
                rel = os.path.relpath(path, root)
                print(f'{rel}:{no}: merge-conflict marker: '
                      f'{line[:40].decode("utf-8", "replace")}')
                bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
