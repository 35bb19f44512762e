#!/usr/bin/env bash
# tune.sh COVENANT COVENANT_RUN WORKDIR emit|record|compile|bad|run|kinds
# [MODELS EMULATE]: measured tuning (`covenant tune`, backends/gpu/gpu_tune.h)
# for nvptx-sm90.
#   emit     the tuning artifact: one group per distinct key (a layer given
#            twice, or as NAME@b1, is one), the pick's and every candidate's
#            PTX byte-identical to `covenant gpu compile LAYER[:SCHEDULE]`;
#            a model's matrix groups
#   record   a hand-written times.json -> the tuning file: the fastest passing
#            candidate per key, never a failed one, nothing where the pick is
#            fastest; Spearman checked against a direct computation
#   compile  compiles with a tuning file: deterministic, the entry changes
#            the kernel to the hand-fixed schedule's, the manifest and the
#            notes name it; a model artifact likewise
#   bad      malformed and hostile tuning files, times.json and tune.json:
#            exit 1 naming the file, line:col and the JSON path
#   run      covenant-run --tune on the device (77 without a CUDA driver)
#   kinds    kinds other than the matrix kernel, on the real models in MODELS:
#            mobilenet_v2_64's channels-last depthwise kernels are keyed
#            "dwconv" with dwP candidates in the artifact; a hand-written
#            times.json recorded (per-kind Spearman) and compiled changes
#            exactly that key's launches, the notes name them, and the
#            plan's CPU emulation (EMULATE -u) still matches the reference;
#            malformed depthwise entries are located errors
set -u
cov=$1 run=$2 work=$3 what=$4 models=${5:-} emu=${6:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
fail=0
die() { echo "FAIL: $*"; fail=1; }
expect() { # expect CODE PATTERN -- COMMAND ARGS...
  local code=$1 pat=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -ne "$code" ] || ! grep -qF -- "$pat" <<<"$out"; then
    die "$* -> exit $rc, expected $code with '$pat'; got: $out"
  fi
}
G=nvptx-sm90:matmul:b1:m256:n128:k64:f16:none
C=nvptx-sm90:conv2d:n1c64h56w56:k64r3s3:s1p1d1g1:f16:bias-relu

case $what in
emit)
  "$cov" tune gemm_256x128x64 resnet50_res2_3x3 gemm_256x128x64 resnet50_res2_3x3@b1 --target nvptx-sm90 --top 3 -o T \
    > log.txt 2>&1 || { cat log.txt; exit 1; }
  "$py" - "$G" "$C" <<'PY' || fail=1
import json, os, sys
t = json.load(open("T/tune.json"))
man = {k["kernel"]: k for k in json.load(open("T/manifest.json"))["kernels"]}
keys = [g["key"] for g in t["groups"]]
assert keys == sys.argv[1:3], keys
for g in t["groups"]:
    assert 1 <= len(g["candidates"]) <= 3, g
    for k in [g["pick"]] + [c["kernel"] for c in g["candidates"]]:
        assert k in man and os.path.isfile("T/" + man[k]["file"]), k
    ranks = [c["rank"] for c in g["candidates"]]
    assert ranks == sorted(ranks), ranks
print("ok: 2 keys from 4 layers, every kernel in the manifest")
PY
  # the same kernels as covenant gpu compile makes of the layer and of the
  # layer with each schedule fixed
  specs="gemm_256x128x64 resnet50_res2_3x3"
  for l in gemm_256x128x64 resnet50_res2_3x3; do
    for s in $("$py" -c "import json; [print(c['schedule']) for g in json.load(open('T/tune.json'))['groups'] if g['layer'] == '$l' for c in g['candidates']]"); do
      specs="$specs $l:$s"
    done
  done
  "$cov" gpu compile $specs --target nvptx-sm90 -o ref > /dev/null || exit 1
  n=0
  for f in ref/*.ptx; do
    cmp -s "$f" "T/$(basename "$f")" || die "T/$(basename "$f") differs from gpu compile's"
    n=$((n + 1))
  done
  [ "$n" -ge 3 ] && [ "$(ls T/*.ptx | wc -l)" -eq "$n" ] || die "expected the same $n kernels in T"
  "$cov" tune "$root/examples/convnet.onnx" --target nvptx-sm90 --top 2 -o M > /dev/null || exit 1
  "$py" -c "
import json; t = json.load(open('M/tune.json'))
assert [g['key'] for g in t['groups']] == ['nvptx-sm90:conv2d:n1c3h32w32:k10r3s3:s1p0d1g1:f16:bias-relu-pool2',
  'nvptx-sm90:conv2d:n1c10h15w15:k10r5s5:s1p0d1g1:f16:bias-relu'], t
assert all(len(g['candidates']) == 2 for g in t['groups'])" || die "model groups"
  expect 2 "needs --target" -- "$cov" tune gemm_64x64x64 -o X
  expect 2 "-o is required" -- "$cov" tune gemm_64x64x64 --target nvptx-sm90
  expect 2 "--top '0'" -- "$cov" tune gemm_64x64x64 --target nvptx-sm90 --top 0 -o X
  expect 1 "a pool has no schedule" -- "$cov" tune resnet50_stem_pool --target nvptx-sm90 -o X
  ;;
record)
  cat > times.json <<JSON
{"covenant_tune_times": 1, "target": "nvptx-sm90", "device": "hand-written",
 "groups": [
  {"key": "$G", "pick": {"kernel": "p", "ms": 0.020},
   "candidates": [
    {"schedule": "64x64x64:64x64:4:wg0", "kernel": "a", "rank": 0, "cycles": 100, "ms": 0.015, "ok": true},
    {"schedule": "64x64x64:64x64:3:wg0", "kernel": "b", "rank": 1, "cycles": 200, "ms": 0.010, "ok": false},
    {"schedule": "64x64x64:32x32:3", "kernel": "c", "rank": 2, "cycles": 300, "ms": 0.018, "ok": true},
    {"schedule": "64x64x32:32x32:3", "kernel": "d", "rank": 3, "cycles": 400, "ms": 0.017, "ok": true}]},
  {"key": "$C", "pick": {"kernel": "q", "ms": 0.010},
   "candidates": [
    {"schedule": "64x64x64:32x32:3", "kernel": "e", "rank": 0, "cycles": 500, "ms": 0.0101, "ok": true}]},
  {"key": "nvptx-sm90:matmul:b1:m8:n8:k8:f16:none", "layer": "x", "error": "the pick did not run"}]}
JSON
  "$cov" tune --record times.json -o tuning.json > report.txt || { cat report.txt; exit 1; }
  "$py" - "$G" <<'PY' || fail=1
import json, sys
t = json.load(open("tuning.json"))
assert t["covenant_tuning"] == 1 and t["target"] == "nvptx-sm90", t
# the fastest passing candidate (b is faster but failed); the conv's pick stays
assert [(e["key"], e["schedule"]) for e in t["entries"]] == [(sys.argv[1], "64x64x64:64x64:4:wg0")], t["entries"]
# Spearman over the passing candidates of both keys, computed directly
cyc = [100, 300, 400, 500]; ms = [0.015, 0.018, 0.017, 0.0101]
def rank(v): return [sorted(v).index(x) + 1 for x in v]
rc, rm, n = rank(cyc), rank(ms), len(cyc)
rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rc, rm)) / (n * (n * n - 1))
assert abs(t["spearman_pooled"] - rho) < 1e-12, (t["spearman_pooled"], rho)
print("ok: entries and pooled Spearman %.3f" % rho)
PY
  grep -qF "$G  pick 0.0200 ms  best 64x64x64:64x64:4:wg0 0.0150 ms  pick/best 1.333  rho 0.500  3 ok, 1 failed" report.txt \
    || die "report line: $(cat report.txt)"
  grep -qF "$C  pick 0.0100 ms  best 64x64x64:32x32:3 0.0101 ms" report.txt && grep -qF -- "-> the compiler's pick" report.txt \
    || die "the pick stays: $(cat report.txt)"
  ;;
compile)
  cat > tuning.json <<JSON
{"covenant_tuning": 1, "target": "nvptx-sm90",
 "entries": [{"key": "$G", "schedule": "64x64x32:32x32:3", "ms": 0.01},
             {"key": "nvptx-sm90:conv2d:n1c3h32w32:k10r3s3:s1p0d1g1:f16:bias-relu-pool2", "schedule": "128x64x32:32x32:2"}]}
JSON
  echo '{"covenant_tuning": 1, "target": "nvptx-sm90", "entries": []}' > empty.json
  "$cov" gpu compile gemm_256x128x64 resnet50_res2_3x3 --target nvptx-sm90 --tuning tuning.json -o a > out_a.txt 2>&1 \
    || { cat out_a.txt; exit 1; }
  "$cov" gpu compile gemm_256x128x64 resnet50_res2_3x3 --target nvptx-sm90 --tuning tuning.json -o b > /dev/null 2>&1
  "$cov" gpu compile gemm_256x128x64 resnet50_res2_3x3 --target nvptx-sm90 -o u > /dev/null 2>&1
  "$cov" gpu compile gemm_256x128x64 resnet50_res2_3x3 --target nvptx-sm90 --tuning empty.json -o e > /dev/null 2>&1
  "$cov" gpu compile gemm_256x128x64:64x64x32:32x32:3 --target nvptx-sm90 -o h > /dev/null 2>&1
  diff -r a b > /dev/null || die "two compiles with the tuning file differ"
  diff -r u e > /dev/null || die "an empty tuning file changed the kernels"
  cmp -s a/resnet50_res2_3x3.ptx u/resnet50_res2_3x3.ptx || die "a key the file lacks changed"
  cmp -s a/gemm_256x128x64.ptx u/gemm_256x128x64.ptx && die "the tuning entry did not change the kernel"
  sed 's/covenant_gemm_256x128x64_t64x64x32w32x32s3/covenant_gemm_256x128x64/g' h/gemm_256x128x64_t64x64x32w32x32s3.ptx \
    | cmp -s - a/gemm_256x128x64.ptx || die "the tuned kernel is not the hand-fixed schedule's"
  grep -qF '"tuned": "64x64x32:32x32:3"' a/manifest.json || die "the manifest does not mark the tuned kernel"
  [ "$(grep -c '"tuned"' a/manifest.json)" -eq 1 ] || die "one kernel is tuned"
  grep -qF "note: covenant_gemm_256x128x64: schedule 64x64x32:32x32:3 from the tuning file tuning.json" out_a.txt \
    || die "the note: $(cat out_a.txt)"
  # a :ws schedule (the warp-specialised kernel): its manifest entry carries the tensor maps
  printf '%s\n' "{\"covenant_tuning\": 1, \"target\": \"nvptx-sm90\", \"entries\": [{\"key\": \"$G\", \"schedule\": \"128x128x64:64x128:4:ws\"}]}" > ws.json
  "$cov" gpu compile gemm_256x128x64 --target nvptx-sm90 --tuning ws.json -o w > out_w.txt 2>&1 || die ":ws entry: $(cat out_w.txt)"
  grep -q 'cp.async.bulk.tensor.2d' w/gemm_256x128x64.ptx && grep -q 'setmaxnreg' w/gemm_256x128x64.ptx &&
    grep -qF '"tuned": "128x128x64:64x128:4:ws"' w/manifest.json && grep -qF '"tma"' w/manifest.json ||
    die "the :ws tuning entry is not the warp-specialised kernel"
  m=$root/examples/convnet.onnx
  "$cov" compile "$m" --target nvptx-sm90 --tuning tuning.json -o m1.covart > out_m.txt 2>&1 || { cat out_m.txt; exit 1; }
  "$cov" compile "$m" --target nvptx-sm90 --tuning tuning.json -o m2.covart > /dev/null 2>&1
  "$cov" compile "$m" --target nvptx-sm90 -o m0.covart > /dev/null 2>&1
  cmp -s m1.covart m2.covart || die "two model compiles with the tuning file differ"
  cmp -s m1.covart m0.covart && die "the tuning entry did not change the model"
  grep -qF "note: covenant_g0_1_matrix_cast (conv1, conv2d): schedule 128x64x32:32x32:2 from the tuning file tuning.json" out_m.txt \
    && grep -qF "note: 1 kernel from the tuning file" out_m.txt || die "model notes: $(cat out_m.txt)"
  ;;
bad)
  t='"covenant_tuning": 1, "target": "nvptx-sm90"'
  badfile() { # badfile PATTERN JSON: compile refuses it with PATTERN
    printf '%s\n' "$2" > bad.json
    expect 1 "$1" -- "$cov" gpu compile gemm_256x128x64 --target nvptx-sm90 --tuning bad.json -o x
  }
  badfile "bad.json:1:1: error: \$: a tuning file is a JSON object" '[]'
  badfile "bad.json:1:21: error: \$.covenant_tuning: expected \"covenant_tuning\": 1" '{"covenant_tuning": 2}'
  badfile "error: \$.target: the file tunes target 'amdgpu-gfx942', not 'nvptx-sm90'" '{"covenant_tuning": 1, "target": "amdgpu-gfx942", "entries": []}'
  badfile "error: \$.entries: expected \"entries\": an array" "{$t, \"entries\": {}}"
  badfile "error: \$.entries[0]: an entry is an object" "{$t, \"entries\": [7]}"
  badfile "error: \$.entries[0].key: expected \"key\"" "{$t, \"entries\": [{\"key\": 3, \"schedule\": \"64x64x32:32x32:3\"}]}"
  badfile "error: \$.entries[0].key: key 'amdgpu-gfx942:x' is not one of target nvptx-sm90" "{$t, \"entries\": [{\"key\": \"amdgpu-gfx942:x\", \"schedule\": \"64x64x32:32x32:3\"}]}"
  badfile "error: \$.entries[0].schedule: schedule '64x64x32:32x32:1'" "{$t, \"entries\": [{\"key\": \"$G\", \"schedule\": \"64x64x32:32x32:1\"}]}"
  badfile "error: \$.entries[0].schedule: schedule '99999x1x1:1x1:2'" "{$t, \"entries\": [{\"key\": \"$G\", \"schedule\": \"99999x1x1:1x1:2\"}]}"
  badfile "error: \$.entries[1].key: key '$G' again (first at \$.entries[0])" "{$t, \"entries\": [{\"key\": \"$G\", \"schedule\": \"64x64x32:32x32:3\"}, {\"key\": \"$G\", \"schedule\": \"64x64x32:32x32:2\"}]}"
  badfile "bad.json:2:1: error: \$.entries: invalid JSON" "{$t, \"entries\": ["
  badfile "invalid JSON: duplicate object key" "{$t, \"target\": \"nvptx-sm90\", \"entries\": []}"
  badfile "bad.json:1:127: error: \$.entries[0].schedule: schedule 1024x1024x1024:1024x1024:16 of key '$G' (gemm_256x128x64) does not plan: GPU plan: " "{$t, \"entries\": [{\"key\": \"$G\", \"schedule\": \"1024x1024x1024:1024x1024:16\"}]}"
  # deep nesting: an error, not a crash
  $py -c "print('{\"covenant_tuning\": 1, \"entries\": ' + '[' * 100000 + ']' * 100000 + '}')" > bad.json
  expect 1 "bad.json" -- "$cov" gpu compile gemm_256x128x64 --target nvptx-sm90 --tuning bad.json -o x
  expect 1 "no.json: error" -- "$cov" gpu compile gemm_256x128x64 --target nvptx-sm90 --tuning no.json -o x
  # a schedule that does not plan is the file's error, also in a model
  printf '%s\n' "{$t, \"entries\": [{\"key\": \"nvptx-sm90:conv2d:n1c3h32w32:k10r3s3:s1p0d1g1:f16:bias-relu-pool2\", \"schedule\": \"1024x1024x1024:1024x1024:16\"}]}" > bad.json
  expect 1 "bad.json:1:149: error: \$.entries[0].schedule: schedule 1024x1024x1024:1024x1024:16 of key 'nvptx-sm90:conv2d:n1c3h32w32:k10r3s3:s1p0d1g1:f16:bias-relu-pool2' (conv1) does not plan: GPU plan" -- \
    "$cov" compile "$root/examples/convnet.onnx" --target nvptx-sm90 --tuning bad.json -o x.covart
  # times.json for --record
  badtimes() { printf '%s\n' "$2" > times.json; expect 1 "$1" -- "$cov" tune --record times.json -o t.json; }
  badtimes "times.json:1:1: error: \$: times.json is a JSON object" '[7]'
  badtimes "error: \$.covenant_tune_times: expected \"covenant_tune_times\": 1" '{"covenant_tune_times": "1"}'
  badtimes "error: \$.groups[0].pick: expected \"pick\"" '{"covenant_tune_times": 1, "target": "nvptx-sm90", "groups": [{"key": "k", "pick": 1}]}'
  badtimes "error: \$.groups[0].candidates[0].schedule: schedule 'x'" '{"covenant_tune_times": 1, "target": "nvptx-sm90", "groups": [{"key": "k", "pick": {"kernel": "p", "ms": 1}, "candidates": [{"schedule": "x", "kernel": "k", "ok": true}]}]}'
  badtimes "error: \$.groups[0].candidates[0].ms: expected \"ms\": a number >= 0" '{"covenant_tune_times": 1, "target": "nvptx-sm90", "groups": [{"key": "k", "pick": {"kernel": "p", "ms": 1}, "candidates": [{"schedule": "64x64x32:32x32:3", "kernel": "k", "ok": true, "cycles": 1, "ms": -1}]}]}'
  expect 2 "--record takes TIMES.json and -o only" -- "$cov" tune --record times.json --target nvptx-sm90 -o t.json
  # a tuning artifact the runtime refuses before it needs a device
  "$cov" tune gemm_256x128x64 --target nvptx-sm90 --top 2 -o T > /dev/null || exit 1
  sed -i 's/"kernel": "covenant_gemm_256x128x64_t[^"]*"/"kernel": "nope"/' T/tune.json
  expect 1 "T/tune.json:" -- "$run" T --tune -o times.json
  expect 1 "error: \$.groups[0].candidates[0]: kernel 'nope' is not in T/manifest.json" -- "$run" T --tune -o times.json
  echo '{"covenant_tune": 2}' > T/tune.json
  expect 1 "T/tune.json:1:19: error: \$.covenant_tune: expected \"covenant_tune\": 1" -- "$run" T --tune -o times.json
  expect 2 "--reps and --tolerance are for --tune" -- "$run" T --reps 3
  ;;
run)
  "$cov" tune gemm_256x128x64 resnet50_res2_3x3 --target nvptx-sm90 --top 3 -o T > /dev/null || exit 1
  out=$("$run" T --tune -o times.json --reps 3 --iters 5 2>&1)
  rc=$?
  if [ $rc -eq 4 ]; then
    echo "skipped: no CUDA driver or GPU: $out"
    exit 77
  fi
  [ $rc -eq 0 ] || { echo "FAIL: covenant-run --tune exit $rc: $out"; exit 1; }
  "$cov" tune --record times.json -o tuning.json || fail=1
  "$py" -c "
import json; t = json.load(open('times.json'))
assert len(t['groups']) == 2 and all(g['pick']['ms'] > 0 for g in t['groups'])
assert all(c['ok'] and c['ms'] > 0 for g in t['groups'] for c in g['candidates']), t" || fail=1
  ;;
kinds)
  M=$models/mobilenet_v2_64.onnx
  "$cov" tune "$M" --target nvptx-sm90 --top 3 -o D > log.txt 2>&1 || { cat log.txt; exit 1; }
  # the first two depthwise keys, the pick's pixels per thread and a
  # candidate with other ones
  "$py" - > keys.txt <<'PY' || exit 1
import json, os, re
t = json.load(open("D/tune.json"))
man = {k["kernel"]: k for k in json.load(open("D/manifest.json"))["kernels"]}
dw = [g for g in t["groups"] if g["key"].split(":")[1] == "dwconv"]
assert len(dw) >= 2, [g["key"] for g in t["groups"]]
assert any(g["key"].split(":")[1] == "conv2d" for g in t["groups"])
for g in dw:
    assert g["candidates"], g
    for c in g["candidates"]:
        assert re.fullmatch("dw[1-8]", c["schedule"]), c
        assert c["kernel"].endswith("_" + c["schedule"]), c
    for k in [g["pick"]] + [c["kernel"] for c in g["candidates"]]:
        e = man[k]
        assert os.path.isfile("D/" + e["file"]) and e["out_layout"] == "nhwc" and e["out_dtype"] == "f16", e
        assert e["plan"].startswith("depthwise"), e
    cy = [c["cycles"] for c in g["candidates"]]
    assert cy == sorted(cy), cy
pw = lambda k: int(re.search(r"depthwise, (\d) pixel", man[k]["plan"]).group(1))
g0, g1 = dw[0], dw[1]
other = next(c for c in g0["candidates"] if int(c["schedule"][2:]) != pw(g0["pick"]))
print(g0["key"], other["schedule"], pw(g0["pick"]), g1["key"])
PY
  read -r K S P K2 < keys.txt
  # a 3x3 depthwise kernel's PTX is the same as gpu compile's hand-fixed one
  cat > times.json <<JSON
{"covenant_tune_times": 1, "target": "nvptx-sm90", "device": "hand-written",
 "groups": [
  {"key": "$K", "pick": {"kernel": "p", "ms": 0.010},
   "candidates": [
    {"schedule": "dw$P", "kernel": "a", "rank": 0, "cycles": 100, "ms": 0.0101, "ok": true},
    {"schedule": "$S", "kernel": "b", "rank": 1, "cycles": 200, "ms": 0.006, "ok": true},
    {"schedule": "dw8", "kernel": "c", "rank": 2, "cycles": 300, "ms": 0.004, "ok": false},
    {"schedule": "dw7", "kernel": "d", "rank": 3, "cycles": 400, "ms": 0.008, "ok": true}]},
  {"key": "$K2", "pick": {"kernel": "q", "ms": 0.005},
   "candidates": [
    {"schedule": "dw1", "kernel": "e", "rank": 0, "cycles": 10, "ms": 0.005, "ok": true},
    {"schedule": "dw2", "kernel": "f", "rank": 1, "cycles": 20, "ms": 0.009, "ok": true},
    {"schedule": "dw4", "kernel": "g", "rank": 2, "cycles": 30, "ms": 0.012, "ok": true}]},
  {"key": "nvptx-sm90:matmul:b1:m64:n64:k64:f16:none", "pick": {"kernel": "h", "ms": 0.02},
   "candidates": [
    {"schedule": "64x64x64:32x32:3", "kernel": "i", "rank": 0, "cycles": 1, "ms": 0.03, "ok": true},
    {"schedule": "64x64x32:32x32:3", "kernel": "j", "rank": 1, "cycles": 2, "ms": 0.02, "ok": true},
    {"schedule": "64x64x32:32x32:2", "kernel": "k", "rank": 2, "cycles": 3, "ms": 0.01, "ok": true}]}]}
JSON
  "$cov" tune --record times.json -o tuning.json > report.txt || { cat report.txt; exit 1; }
  "$py" - "$K" "$S" <<'PY' || fail=1
import json, sys
t = json.load(open("tuning.json"))
# the fastest passing candidate of the first key; the second's pick stays;
# the matmul's fastest beats its pick
got = [(e["key"], e["schedule"]) for e in t["entries"]]
assert got[0] == (sys.argv[1], sys.argv[2]) and len(got) == 2 and got[1][1] == "64x64x32:32x32:2", got
def rho(x, y):
    r = lambda v: [sorted(v).index(a) + 1 for a in v]
    rx, ry, n = r(x), r(y), len(x)
    return 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry)) / (n * (n * n - 1))
dw = rho([100, 200, 400, 10, 20, 30], [0.0101, 0.006, 0.008, 0.005, 0.009, 0.012])
assert abs(t["spearman_by_kind"]["dwconv"] - dw) < 1e-12, (t["spearman_by_kind"], dw)
assert abs(t["spearman_by_kind"]["matmul"] - -1.0) < 1e-12, t["spearman_by_kind"]
print("ok: per-kind Spearman dwconv %.3f matmul -1" % dw)
PY
  grep -qF "dwconv: Spearman (mapper cycles vs measured ms, 6 kernels)" report.txt \
    && grep -qF "matmul: Spearman (mapper cycles vs measured ms, 3 kernels) -1.000" report.txt || die "report: $(cat report.txt)"
  # compiled with the file: exactly the launches of that key change
  "$cov" compile "$M" --target nvptx-sm90 --tuning tuning.json -o m1.cov > out1.txt 2>&1 || { cat out1.txt; exit 1; }
  "$cov" compile "$M" --target nvptx-sm90 -o m0.cov > /dev/null 2>&1 || exit 1
  "$run" m1.cov --info | grep '^step' > i1.txt
  "$run" m0.cov --info | grep '^step' > i0.txt
  n=$(grep -c ", dwconv): schedule $S from the tuning file tuning.json" out1.txt)
  [ "$n" -ge 1 ] && grep -qF "note: $n kernel" out1.txt || die "notes: $(cat out1.txt)"
  kern=$(grep -F ", dwconv): schedule $S" out1.txt | head -1 | sed 's/^note: \([^ ]*\) .*/\1/')
  changed=$(diff i0.txt i1.txt | grep -c '^>')
  [ "$changed" -eq "$n" ] || die "$changed launches changed, the notes name $n: $(diff i0.txt i1.txt)"
  diff i0.txt i1.txt | grep '^[<>]' | grep -vqF "launch $kern grid" && die "a launch other than $kern changed"
  if [ -n "$emu" ]; then
    COVENANT_TARGET_PATH=$root/targets "$emu" -u tuning.json nvptx-sm90 1e-2 "$M" > emu.txt 2>&1 \
      || die "the tuned plan's emulation: $(cat emu.txt)"
  fi
  # malformed depthwise entries: located errors
  t='"covenant_tuning": 1, "target": "nvptx-sm90"'
  printf '%s\n' "{$t, \"entries\": [{\"key\": \"$K\", \"schedule\": \"dw9\"}]}" > bad.json
  expect 1 "bad.json:1:" -- "$cov" compile "$M" --target nvptx-sm90 --tuning bad.json -o x.cov
  expect 1 "\$.entries[0].schedule: schedule 'dw9': a depthwise schedule is written dwP" -- "$cov" compile "$M" --target nvptx-sm90 --tuning bad.json -o x.cov
  printf '%s\n' "{$t, \"entries\": [{\"key\": \"$K\", \"schedule\": \"64x64x32:32x32:3\"}]}" > bad.json
  expect 1 "\$.entries[0].schedule: schedule '64x64x32:32x32:3' of key '$K': a depthwise kernel's schedule is dwP" -- \
    "$cov" compile "$M" --target nvptx-sm90 --tuning bad.json -o x.cov
  printf '%s\n' "{$t, \"entries\": [{\"key\": \"$G\", \"schedule\": \"dw2\"}]}" > bad.json
  expect 1 "bad.json:1:127: error: \$.entries[0].schedule: schedule 'dw2' of key '$G': dwP is a depthwise kernel's schedule" -- \
    "$cov" gpu compile gemm_256x128x64 --target nvptx-sm90 --tuning bad.json -o x
  # a tuning artifact whose manifest the runtime refuses before it needs a device
  sed -i '0,/"out_dtype": "f16"/s//"out_dtype": "i8"/' D/manifest.json
  expect 1 "expected \"out_dtype\": \"f16\" or \"f32\"" -- "$run" D --tune -o t.json
  ;;
*)
  echo "tune.sh: unknown mode $what"
  exit 2
  ;;
esac
[ $fail -eq 0 ] && echo "ok: tune $what"
exit $fail
