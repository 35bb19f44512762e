#!/usr/bin/env bash
# explore merge treats shard folders as hostile input: a study file that is
# a symbolic link (to /etc/passwd here) or not a regular file, a rows/
# folder that is a link, a figure that is NaN, inf or text, a duplicated
# row, a row of another design: each is refused (exit 1) with an error
# naming the file (and line), and nothing of it reaches the merged study.
. "$(dirname "$0")/common.sh"
for i in 0 1; do
  "$cov" explore "${study_args[@]}" --shard $i/2 -q -o "$work/s$i" > /dev/null || fail "shard $i"
done
"$cov" explore merge "$work/s0" "$work/s1" -o "$work/good" > /dev/null || fail "merge of intact shards"

# refused MUTATION PATTERN: a fresh copy of shard 0, MUTATION run in it, then
# the merge must exit 1 with PATTERN on stderr and write no merged CSV
n=0
refused() {
  n=$((n + 1))
  local c="$work/c$n"
  rm -rf "$c" && cp -a "$work/s0" "$c"
  (cd "$c" && eval "$1")
  timeout 60 "$cov" explore merge "$c" "$work/s1" -o "$work/m$n" > "$work/m$n.out" 2> "$work/m$n.err"
  local rc=$?
  [ $rc -eq 1 ] || fail "$1: exit $rc, expected 1"
  grep -q -- "$2" "$work/m$n.err" || { fail "$1: no /$2/ in:"; cat "$work/m$n.err" >&2; }
  [ ! -e "$work/m$n" ] || fail "$1: the merged folder was begun"
  ! grep -rqs "root:" "$work/m$n" || fail "$1: /etc/passwd copied into the merged study"
}
refused 'rm rows/d000.txt && ln -s /etc/passwd rows/d000.txt' \
  "c1/rows/d000.txt: error: is a symbolic link; study files must be regular files"
refused 'ln -sf /etc/passwd designs/d000.json' "c2/designs/d000.json: error: is a symbolic link"
refused 'mv rows realrows && ln -s realrows rows' "c3/rows: error: is a symbolic link"
refused 'rm rows/d000.txt && mkfifo rows/d000.txt' "c4/rows/d000.txt: error: is not a regular file"
refused 'rm study.txt && ln -s ../s1/study.txt study.txt' "c5/study.txt: error: is a symbolic link"
# figures: cycles is the 8th field (design, 3 parameters, layer, op, evaluator)
refused "sed -i '3s/^\(row \([^,]*,\)\{7\}\)[0-9]*/\1nan/' rows/d000.txt" \
  "c6/rows/d000.txt:3:.*error: cycles is 'nan': expected a finite number or nothing"
refused "sed -i '4s/^\(row \([^,]*,\)\{8\}\)[0-9.e+-]*/\1inf/' rows/d002.txt" \
  "c7/rows/d002.txt:4:.*error: time_us is 'inf'"
refused "sed -i '3s/,[0-9.e+-]*\$/,1,5/' rows/d000.txt" "c8/rows/d000.txt:3:.*error: malformed row"
refused "sed -i '3p' rows/d000.txt" "c9/rows/d000.txt:4:.*error: layer 'resnet50_conv1' a second time (duplicated row)"
refused "sed -i '\$d' rows/d000.txt" "c10/rows/d000.txt: error: 4 row(s) for a complete design of 5 layer(s)"
refused "sed -i '3s/^row d000,/row d002,/' rows/d000.txt" "c11/rows/d000.txt:3:.*error: a row of design 'd002' in d000's file"
refused "sed -i '3s/^row d000,8x8,/row d000,16x16,/' rows/d000.txt" \
  "c12/rows/d000.txt:3:.*error: pe_array.dims is '16x16', but design d000 has '8x8'"
finish
