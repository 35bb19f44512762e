/* tests/nvptx/mma_probe.c: builds, through the LLVM C API, one warp that
 * multiplies A[16x16] (f16, row-major) by B[16x8] (f16, row-major) into
 * C[16x8] (f32) with mma.sync.m16n8k16.row.col.f32.f16.f16.f32, and writes
 * its PTX. run_probe.c runs that PTX on an NVIDIA GPU against a CPU loop.
 *
 * Fragment layout (PTX ISA, mma.m16n8k16 with .f16): g = lane / 4, t = lane % 4
 *   a0 = A[g][2t..2t+1]  a1 = A[g+8][2t..]  a2 = A[g][2t+8..]  a3 = A[g+8][2t+8..]
 *   b0 = B[2t..2t+1][g]  b1 = B[2t+8..2t+9][g]
 *   c0,c1 = C[g][2t..2t+1]  c2,c3 = C[g+8][2t..2t+1]
 * usage: mma_probe MCPU OUT.ptx */
#include <llvm-c/Core.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/nvptx/nvptx_ptx.h"

static LLVMContextRef ctx;
static LLVMBuilderRef b;
static LLVMTypeRef i32, f16, f32;

static LLVMValueRef cint(int v) { return LLVMConstInt(i32, (unsigned long long)v, 1); }
static LLVMValueRef add(LLVMValueRef x, LLVMValueRef y) { return LLVMBuildAdd(b, x, y, ""); }
static LLVMValueRef mul(LLVMValueRef x, LLVMValueRef y) { return LLVMBuildMul(b, x, y, ""); }

static LLVMValueRef load_f16(LLVMValueRef base, LLVMValueRef idx) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, f16, base, &idx, 1, "");
  return LLVMBuildLoad2(b, f16, p, "");
}

/* <2 x half> of base[r0*ld + c0] and base[r1*ld + c1] */
static LLVMValueRef pair(LLVMValueRef base, int ld, LLVMValueRef r0, LLVMValueRef c0,
                         LLVMValueRef r1, LLVMValueRef c1) {
  LLVMTypeRef v2h = LLVMVectorType(f16, 2);
  LLVMValueRef v = LLVMGetUndef(v2h);
  v = LLVMBuildInsertElement(b, v, load_f16(base, add(mul(r0, cint(ld)), c0)), cint(0), "");
  return LLVMBuildInsertElement(b, v, load_f16(base, add(mul(r1, cint(ld)), c1)), cint(1), "");
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MCPU OUT.ptx\n", argv[0]);
    return 2;
  }
  ctx = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("mma_probe", ctx);
  i32 = LLVMInt32TypeInContext(ctx);
  f16 = LLVMHalfTypeInContext(ctx);
  f32 = LLVMFloatTypeInContext(ctx);
  LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1);
  LLVMTypeRef params[] = {gptr, gptr, gptr};
  LLVMValueRef fn = LLVMAddFunction(m, "covenant_mma_probe",
                                    LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
  nvptx_mark_kernel(m, fn);
  b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));

  const char *tid_name = "llvm.nvvm.read.ptx.sreg.tid.x";
  LLVMValueRef tid_f =
      LLVMGetIntrinsicDeclaration(m, LLVMLookupIntrinsicID(tid_name, strlen(tid_name)), NULL, 0);
  LLVMValueRef lane = LLVMBuildCall2(b, LLVMGlobalGetValueType(tid_f), tid_f, NULL, 0, "lane");
  LLVMValueRef g = LLVMBuildUDiv(b, lane, cint(4), "g"), t = LLVMBuildURem(b, lane, cint(4), "t");
  LLVMValueRef t2 = mul(t, cint(2)), t2p1 = add(t2, cint(1)), g8 = add(g, cint(8));
  LLVMValueRef A = LLVMGetParam(fn, 0), B = LLVMGetParam(fn, 1), C = LLVMGetParam(fn, 2);

  LLVMValueRef args[10];
  args[0] = pair(A, 16, g, t2, g, t2p1);
  args[1] = pair(A, 16, g8, t2, g8, t2p1);
  args[2] = pair(A, 16, g, add(t2, cint(8)), g, add(t2p1, cint(8)));
  args[3] = pair(A, 16, g8, add(t2, cint(8)), g8, add(t2p1, cint(8)));
  args[4] = pair(B, 8, t2, g, t2p1, g);
  args[5] = pair(B, 8, add(t2, cint(8)), g, add(t2p1, cint(8)), g);
  for (int i = 6; i < 10; i++) args[i] = LLVMConstReal(f32, 0.0);
  const char *mma_name = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32";
  LLVMValueRef mma_f =
      LLVMGetIntrinsicDeclaration(m, LLVMLookupIntrinsicID(mma_name, strlen(mma_name)), NULL, 0);
  LLVMValueRef d = LLVMBuildCall2(b, LLVMGlobalGetValueType(mma_f), mma_f, args, 10, "d");
  LLVMValueRef rows[4] = {g, g, g8, g8}, cols[4] = {t2, t2p1, t2, t2p1};
  for (int i = 0; i < 4; i++) {
    LLVMValueRef idx = add(mul(rows[i], cint(8)), cols[i]);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, f32, C, &idx, 1, "");
    LLVMBuildStore(b, LLVMBuildExtractValue(b, d, (unsigned)i, ""), p);
  }
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);

  char *ptx = NULL;
  size_t n = 0;
  cov_status st = nvptx_ptx_build(m, argv[1], 3, &ptx, &n);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    return 1;
  }
  FILE *f = fopen(argv[2], "wb");
  int ok = f && fwrite(ptx, 1, n, f) == n;
  if (f) ok &= fclose(f) == 0;
  free(ptx);
  return ok ? 0 : 1;
}
