#!/usr/bin/env bash
# cli_usage.sh COVENANT SRCDIR: usage errors exit 2 with a hint, help exits 0,
# unknown targets exit 1 naming where covenant looked.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2
cd "$src" || exit 2
expect 2 "usage: covenant" -- "$cov"
expect 0 "commands:" -- "$cov" --help
expect 0 "covenant acg check" -- "$cov" acg --help
expect 0 "covenant acg check" -- "$cov" acg show --help
expect 2 "unknown command 'frobnicate'" -- "$cov" frobnicate
expect 2 "unknown subcommand 'lint'" -- "$cov" acg lint
expect 2 "show takes exactly one TARGET" -- "$cov" acg show
expect 2 "unknown option" -- "$cov" acg dot --bogus targets/npu-16x16.json
expect 2 "check needs at least one TARGET" -- "$cov" acg check
expect 1 "no target named 'npu-99x99'; the targets found: .*npu-16x16" -- "$cov" acg show npu-99x99
expect 1 "no such file" -- "$cov" acg check does/not/exist.json
expect 1 "is a directory" -- "$cov" acg check targets/
expect 0 "npu-16x16" -- "$cov" acg show npu-16x16
expect 1 "cannot open for writing" -- "$cov" acg fmt npu-16x16 -o /nonexistent/dir/x.json
exit $fail
