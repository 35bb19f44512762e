# artifact_edit.sh, sourced by the tests that hand-edit artifacts
# (hostile_artifact.sh, hostile_control.sh): edit an artifact with every
# checksum valid again (runtime/artifact.py write), run covenant-run on it
# and expect its exit status and message. The sourcing script sets
# rt (covenant-run), src (the source tree), work (a scratch folder) and
# art (the artifact `edit` starts from); it ends with `exit $fail`.
py=/usr/bin/python3
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# what covenant-run must never show: the machine's name, the environment
host=$(head -c 200 /etc/hostname 2>/dev/null | tr -d '\n')
envname=$(tr '\0' '\n' </proc/self/environ | head -1 | cut -d= -f1)

# expect RC PATTERN ART [ARGS...]: covenant-run's exit status and message
# (in $out), under a timeout of $TMO seconds (10 unless set): a refusal is
# at once; nothing from the outside world or raw control bytes in it
expect() {
  local rc=$1 pat=$2 a=$3
  shift 3
  out=$(timeout "${TMO:-10}" "$rt" "$a" "$@" 2>&1 </dev/null)
  got=$?
  if [ "$got" != "$rc" ] || ! grep -qF -- "$pat" <<<"$out"; then
    bad "$(basename "$a") $* (exit $got, want $rc, pattern '$pat')"
    echo "$out" | head -5
  fi
  if [ -n "$host" ] && grep -qF -- "'$host'" <<<"$out"; then bad "$(basename "$a"): quoted /etc/hostname"; fi
  if [ -n "$envname" ] && grep -qF -- "'$envname" <<<"$out"; then bad "$(basename "$a"): quoted the environment"; fi
  if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$out"; then bad "$(basename "$a"): raw control bytes"; fi
}

# at PATH: the last message is located at the JSON path PATH
at() { grep -qF -- "error: $1: " <<<"$out" || bad "not located at $1: $out"; }

# edit NAME PYTHON [FROM]: the artifact FROM ($art unless given) with its
# manifest `m` and data `d` changed by PYTHON (s(op): the index of the
# first step of that op; `version`: the format version to write, the
# current one unless set), checksums recomputed, written to $work/NAME.cvx
edit() {
  $py - "$src/runtime" "${3:-$art}" "$work/$1.cvx" "$2" <<'PY' || bad "edit $1"
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, d = artifact.read(sys.argv[2])
d = bytearray(d)
version = None
def s(op):
    return [i for i, x in enumerate(m["steps"]) if x["op"] == op][0]
exec(sys.argv[4])
artifact.write(sys.argv[3], m, d, version=version)
PY
}
