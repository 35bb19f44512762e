#!/bin/bash
# ld.lld is a child process whose output covenant captures: when it crashes
# (as it did under `ulimit -v`, unable to start its threads), the user sees
# covenant's own one-line error naming the linker, the signal and lld's
# first line of diagnosis, never LLVM's crash banner and stack dump. The
# linker here is a stand-in that prints an LLVM crash dump and aborts; one
# that fails plainly gives its exit status and first line.
set -u
cov=$1 model=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail=0
cat >"$work/crash-lld" <<'SH'
#!/bin/bash
echo "terminate called after throwing an instance of 'std::system_error'" >&2
echo "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace." >&2
echo "Stack dump:" >&2
echo "0.	Program arguments: ld.lld -shared" >&2
echo " #0 0x00007f0000000000 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int)" >&2
kill -ABRT $$
SH
cat >"$work/fail-lld" <<'SH'
#!/bin/bash
echo "ld.lld: error: undefined symbol: __ocml_exp_f32" >&2
exit 3
SH
chmod +x "$work/crash-lld" "$work/fail-lld"
check() { # check LLD PATTERN
  out=$(COVENANT_LD_LLD=$work/$1 timeout 120 "$cov" compile "$model" --target amdgpu-gfx942 -o "$work/g.cvx" 2>&1)
  rc=$?
  [ $rc = 1 ] && grep -qF -- "$2" <<<"$out" || { echo "FAIL: $1: exit $rc, want 1 and '$2':"; echo "$out"; fail=1; }
  if grep -qE "PLEASE submit|Stack dump|PrintStackTrace" <<<"$out"; then echo "FAIL: $1: the crash dump reached the user"; fail=1; fi
  [ "$(wc -l <<<"$out")" = 1 ] || { echo "FAIL: $1: more than one line:"; echo "$out"; fail=1; }
}
check crash-lld "crash-lld crashed linking the HSACO (signal 6; out of memory under a memory limit such as ulimit -v?): terminate called after throwing an instance of 'std::system_error'"
check fail-lld "fail-lld failed to link the HSACO (exit status 3): ld.lld: error: undefined symbol: __ocml_exp_f32"
exit $fail
