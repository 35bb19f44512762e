#!/usr/bin/env bash
# planted_calls.sh PYTHON CC NM WORKDIR: check_call_cycles.py on objects of a
# planted call cycle (a -> b -> c -> a, with d calling into it and a static
# function of the same name in two files, which draws no edge) must fail and
# name exactly the cycle's files, so the check on backends/gpu can fail.
set -u
py=$1 cc=$2 nm=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cat > "$work/a.c" <<'C'
int b1(int);
static int helper(int x) { return x + 1; }
int a1(int x) { return x > 0 ? b1(helper(x) - 2) : 0; }
C
cat > "$work/b.c" <<'C'
int c1(int);
int b1(int x) { return c1(x); }
C
cat > "$work/c.c" <<'C'
int a1(int);
int c1(int x) { return a1(x - 1); }
C
cat > "$work/d.c" <<'C'
int a1(int);
static int helper(int x) { return x; }
int d1(int x) { return a1(helper(x)); }
C
for f in a b c d; do "$cc" -c -O0 -o "$work/$f.o" "$work/$f.c" || exit 1; done
out=$("$py" "$here/check_call_cycles.py" "$nm" "$work" planted)
rc=$?
want="planted: call cycle between a, b, c: a -> b (b1); b -> c (c1); c -> a (a1)"
if [ $rc -ne 1 ] || [ "$(head -1 <<<"$out")" != "$want" ] || [ "$(grep -c 'call cycle' <<<"$out")" -ne 1 ]; then
  echo "FAIL: the planted cycle was not reported as expected (exit $rc):"; echo "$out"; exit 1
fi
echo "ok: a planted call cycle between files is reported"
