"""tests/arch/c_sources.py: the C sources of the library modules as the
architecture checks read them (check_locations.py, check_sizes.py): the
module directories of cmake/modules.txt, their files in a fixed order, and
the text with comments (and, where asked, string and character literals)
blanked so that what a check matches is code. One reader, so the checks
agree on which files exist and what counts as a comment."""
import os
import re


def module_dirs(root, with_cli=True, modules=None):
    """The directory of each module of ROOT/cmake/modules.txt (or the file
    `modules`), in its order."""
    dirs = []
    with open(modules or os.path.join(root, 'cmake/modules.txt')) as f:
        for line in f:
            cols = line.split('#', 1)[0].split()
            if len(cols) >= 2 and (with_cli or cols[0] != 'cli'):
                dirs.append(cols[1].rstrip('/'))
    return dirs


def sources(root, exts, with_cli=True, dirs=None, modules=None):
    """(path relative to ROOT, text) of every file ending in one of exts under
    the module directories (of `modules`, a modules.txt; or `dirs`), directories and names sorted; a
    subdirectory that is another module's is that module's (read once)."""
    owned = set(module_dirs(root, modules=modules))
    for d in dirs if dirs is not None else module_dirs(root, with_cli, modules):
        walked = []
        for dirpath, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = [s for s in subdirs if os.path.relpath(os.path.join(dirpath, s), root) not in owned]
            walked.append((dirpath, files))
        for dirpath, files in sorted(walked):
            for name in sorted(files):
                if name.endswith(exts):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding='utf-8', errors='replace') as f:
                        yield os.path.relpath(path, root), f.read()


def blank(src, strings=True):
    """src with comments replaced by spaces (newlines kept, so line numbers
    stay right); string and character literals too when `strings`, else kept
    as they are (a literal is still skipped whole: '/*' inside one is not a
    comment)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
        elif src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
        elif src[i] in '"\'':
            j = i + 1
            while j < n and src[j] != src[i] and src[j] != '\n':
                j += 2 if src[j] == '\\' else 1
            j += 1
            if not strings:
                out.append(src[i:j])
                i = j
                continue
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(re.sub(r'[^\n]', ' ', src[i:j]))
        i = j
    return ''.join(out)
