#!/bin/bash
# covenant-run on hand-edited NPU artifacts whose checksums are all valid
# again (runtime/artifact.py write): what a file edited on purpose, or a
# compiler bug, looks like to the reader. Each case runs under `timeout` and
# must be refused at once, located (JSON path), with nothing from the
# outside world or raw control bytes in the output:
#   - arch naming a file (/etc/hostname, /proc/self/environ, a FIFO) is never
#     opened: a stored name is a shipped target name only, and artifacts that
#     embed their ACG use it (also when compiled for an ACG file since moved);
#   - the plan's dataflow: steps reversed (a read before the write), an npu
#     step with no bindings or missing one, an input buffer no `inputs` entry
#     names, a program writing the model's input;
#   - the manifest's target against its ACG and backend;
#   - nonzero padding between blobs; a missing top-level member located at
#     the root; a FIFO given as the artifact;
#   - --info and errors escape control bytes (screen clear, bell, CR, a
#     forged "step 9" line, newlines in names).
set -u
cov=$1 rt=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
art=$work/c.cvx
. "$src/tests/runtime/artifact_edit.sh"
"$cov" compile "$src/examples/convnet.onnx" --target npu-16x16 -o "$art" >/dev/null || bad "compile"

expect 0 "device: npu-sim simulator of npu-16x16" "$art"

# -- a name stored in the artifact is never a path
mkfifo "$work/fifo"
for name in /etc/hostname /proc/self/environ "$work/fifo" ../../etc/hostname; do
  edit path "m.pop('acg', None); m['arch'] = m['target'] = '$name'"
  expect 1 "is not a target name" "$work/path.cvx"
done
# an ACG name without an embedded ACG: looked up as a shipped target
edit named "m.pop('acg', None)"
expect 0 "device: npu-sim simulator of npu-16x16" "$work/named.cvx"
# the embedded ACG is the artifact's target, and an npu-sim one
edit other "m['arch'] = m['target'] = 'npu-32x32-os'"
expect 1 "the artifact's target is 'npu-32x32-os' (npu-sim), its ACG is 'npu-16x16'" "$work/other.cvx"
edit gpu "m.pop('acg', None); m['arch'] = m['target'] = 'nvptx-sm90'"
expect 1 "its ACG is 'nvptx-sm90' (backend nvptx)" "$work/gpu.cvx"
edit split "m['target'] = 'npu-32x32-os'"
expect 1 "arch: manifest: an npu-sim artifact's arch is its target's ACG, 'npu-32x32-os', not 'npu-16x16'" \
  "$work/split.cvx"
# a GPU artifact whose target is a shipped ACG of another backend (where
# the GPU backends are built)
if "$cov" compile "$src/examples/convnet.onnx" --target nvptx-sm90 -o "$work/gpu-art.cvx" >/dev/null 2>&1; then
  edit gpu-wrong "m['target'] = 'amdgpu-gfx942'" "$work/gpu-art.cvx"
  expect 1 "the artifact's target amdgpu-gfx942 is an ACG of backend amdgpu, not of its backend nvptx" \
    "$work/gpu-wrong.cvx"
fi
# an ACG file of the user's: embedded, so the artifact runs after the file is gone
sed 's/"name": "npu-16x16"/"name": "my-npu"/' "$src/targets/npu-16x16.json" >"$work/my-npu.json"
"$cov" compile "$src/examples/convnet.onnx" --target "$work/my-npu.json" -o "$work/mine.cvx" >/dev/null ||
  bad "compile for an ACG file"
rm -f "$work/my-npu.json"
expect 0 "device: npu-sim simulator of my-npu" "$work/mine.cvx"

# -- the plan's dataflow
edit reversed "m['steps'].reverse()"
expect 1 "step 0 reads buffer 2 ('pool1_out', intermediate) into 'in0' before any step writes it" \
  "$work/reversed.cvx"
at "steps[0].binds[0]"
edit unbound "m['steps'][1]['binds'] = []"
expect 1 "steps[1].binds: manifest: npu step 1 ('conv2') binds no buffer" "$work/unbound.cvx"
edit noin "m['steps'][1]['binds'].pop(0)"
expect 1 "the program's input tensor 'in0' is bound to no buffer" "$work/noin.cvx"
at "steps[1].binds"
edit twice "m['steps'][1]['binds'].append(dict(m['steps'][1]['binds'][0]))"
expect 1 "tensor 'in0' is bound twice (binds[0])" "$work/twice.cvx"
at "steps[1].binds[2]"
edit misfit "m['steps'][0]['binds'][1]['buffer'] = 1"
expect 1 "the program's tensor 'out' (f32, 2250 elements) does not fit buffer 1 ('output', f32, 4840 bytes)" \
  "$work/misfit.cvx"
at "steps[0].binds[1]"
edit unnamed "m['buffers'].append({'name': 'x2', 'kind': 'input', 'dtype': 'f32', 'shape': [2], 'bytes': 8})"
expect 1 "buffers[3]: manifest: input buffer 'x2' is named by no 'inputs' entry" "$work/unnamed.cvx"
# (through a view of the input, of the output's size)
edit ininput "m['buffers'].append({'name': 'iv', 'kind': 'view', 'dtype': 'f32', 'shape': [2250], 'bytes': 9000,
                                    'of': 0, 'offset': 0}); m['steps'][0]['binds'][1]['buffer'] = 3"
expect 1 "step 0 writes 'out' into input buffer 3 ('iv')" "$work/ininput.cvx"
at "steps[0].binds[1]"

# -- the container
edit padding "d[m['blobs'][0]['bytes'] + 3] = 7"
expect 1 "padding outside every blob, is 0x07, not zero" "$work/padding.cvx"
edit nomodules "del m['modules']"
expect 1 "nomodules.cvx:1:1: error: manifest: missing member 'modules'" "$work/nomodules.cvx"
# (the path is the root's: no "blobs[2]: " before the message)
grep -q "blobs\[" <<<"$out" && bad "missing 'modules' reported at a blob's path: $out"
start=$(date +%s%N)
expect 1 "is a FIFO, expected a regular file" "$work/fifo"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 2000 ] || bad "the FIFO took seconds to refuse"

# -- bounded work: 30,000 views each of the one before and 30,000 fills of
# the last (a buffer's root is found once per view, not walked per use:
# 9e8 steps of walking, 6 s of CPU at 30,000, before)
edit chain "
n = 30000
b = m['buffers']
base = len(b)
for i in range(n):
    b.append({'name': 'v%d' % i, 'kind': 'view', 'dtype': 'f32', 'shape': [2250], 'bytes': 9000,
              'of': 2 if i == 0 else base + i - 1, 'offset': 0})
m['steps'][:0] = [{'op': 'fill', 'group': 0, 'label': 'f', 'buffer': base + n - 1, 'bytes': 9000, 'value': 0}] * n"
start=$(date +%s%N)
expect 0 "step 30001: npu program 'group_1.npu'" "$work/chain.cvx" --info
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 3000 ] || bad "reading 30,000 chained views took seconds"

# -- control bytes from the artifact are escaped
edit ctl "m['steps'][0]['label'] = '\x1b[2J\x07\rstep 9: npu program \'evil\''; m['model'] = 'a\nb.onnx'"
expect 0 "step 0: npu program 'group_0.npu' (group 0, \\x1b[2J\\x07\\rstep 9: npu program 'evil')" "$work/ctl.cvx" --info
grep -q "^step 9" <<<"$out" && bad "--info printed a forged line: $out"
grep -qF 'model a\nb.onnx' <<<"$out" || bad "--info: the model's name not escaped: $out"
edit nl "m['steps'].reverse(); m['buffers'][2]['name'] = 'pool1\nstep 9: forged'"
expect 1 "('pool1\\nstep 9: forged', intermediate)" "$work/nl.cvx"
[ "$(wc -l <<<"$out")" = 1 ] || bad "an error with a newline in a name takes several lines: $out"
exit $fail
