#!/usr/bin/env bash
# planted_conflicts.sh PYTHON DIR: check_conflicts.py on a tree with a
# committed-looking conflict (and a Markdown heading underlined with "=",
# which it must pass) must exit 1 naming the two marker lines, so the check
# on the real tree can fail. The tree is written at test time under DIR (in
# the build tree) because a planted file in the sources would trip the check.
set -u
py=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir/docs" || exit 1
printf 'Title\n=======\n\ntext\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> main\n' > "$dir/docs/README.md"
printf 'int x; /* <<<<<<< not at the start of a line */\n' > "$dir/ok.c"
out=$("$py" "$here/check_conflicts.py" "$dir")
rc=$?
want=$(printf '%s\n%s' 'docs/README.md:5: merge-conflict marker: <<<<<<< HEAD' \
                       'docs/README.md:9: merge-conflict marker: >>>>>>> main')
if [ $rc -ne 1 ]; then echo "FAIL: check_conflicts.py exited $rc on planted markers, expected 1"; exit 1; fi
if [ "$out" != "$want" ]; then printf 'FAIL: diagnostics differ:\n%s\n' "$out"; exit 1; fi
echo "ok: check_conflicts.py reported both planted markers"
