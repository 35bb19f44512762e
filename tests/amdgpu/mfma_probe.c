/* tests/amdgpu/mfma_probe.c: builds, through the LLVM C API, one wave that
 * stages a 16x16 f16 tile of A in LDS, synchronises, and multiplies it by B
 * with v_mfma_f32_16x16x16f16, then emits a HSACO for the given processor
 * and code object version. The code object is checked statically by
 * check_hsaco.sh (no AMD GPU exists on these machines).
 *
 * MFMA 16x16x16 f16 operand layout (CDNA ISA guide), lane l of 64:
 *   a[i] = A[l % 16][4 * (l / 16) + i]      b[i] = B[4 * (l / 16) + i][l % 16]
 *   d[i] = D[4 * (l / 16) + i][l % 16]                              i = 0..3
 * usage: mfma_probe MCPU CODE_OBJECT_VERSION OUT.hsaco */
#include <llvm-c/Core.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/amdgpu/amdgpu_hsaco.h"

static LLVMValueRef intrinsic(LLVMModuleRef m, const char *name, LLVMTypeRef *fn_type) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
  *fn_type = LLVMGlobalGetValueType(f);
  return f;
}

static LLVMValueRef gep(LLVMBuilderRef b, LLVMTypeRef elt, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(b, elt, base, &idx, 1, "");
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MCPU CODE_OBJECT_VERSION OUT.hsaco\n", argv[0]);
    return 2;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("mfma_probe", ctx);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), f16 = LLVMHalfTypeInContext(ctx),
              f32 = LLVMFloatTypeInContext(ctx);
  LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1), lptr = LLVMPointerTypeInContext(ctx, 3);
  LLVMTypeRef params[] = {gptr, gptr, gptr};
  LLVMValueRef fn = LLVMAddFunction(m, "covenant_mfma_probe",
                                    LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
  LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
  const char *k = "amdgpu-flat-work-group-size", *v = "64,64";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));

  LLVMTypeRef tile_t = LLVMArrayType2(f16, 256);
  LLVMValueRef lds = LLVMAddGlobalInAddressSpace(m, tile_t, "tile_a", 3);
  LLVMSetInitializer(lds, LLVMGetUndef(tile_t));
  LLVMSetLinkage(lds, LLVMInternalLinkage);
  LLVMSetAlignment(lds, 16);

  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  LLVMTypeRef tid_t, bar_t, mfma_t;
  LLVMValueRef tid_f = intrinsic(m, "llvm.amdgcn.workitem.id.x", &tid_t);
  LLVMValueRef bar_f = intrinsic(m, "llvm.amdgcn.s.barrier", &bar_t);
  LLVMValueRef mfma_f = intrinsic(m, "llvm.amdgcn.mfma.f32.16x16x16f16", &mfma_t);
  LLVMValueRef A = LLVMGetParam(fn, 0), B = LLVMGetParam(fn, 1), C = LLVMGetParam(fn, 2);
  LLVMValueRef lane = LLVMBuildCall2(b, tid_t, tid_f, NULL, 0, "lane");
  LLVMValueRef c16 = LLVMConstInt(i32, 16, 0), c4 = LLVMConstInt(i32, 4, 0);
  LLVMValueRef row = LLVMBuildURem(b, lane, c16, "row");
  LLVMValueRef quad = LLVMBuildMul(b, LLVMBuildUDiv(b, lane, c16, ""), c4, "k0");

  /* stage A: each lane copies 4 consecutive halves into LDS */
  for (int i = 0; i < 4; i++) {
    LLVMValueRef idx = LLVMBuildAdd(b, LLVMBuildMul(b, lane, c4, ""), LLVMConstInt(i32, (unsigned)i, 0), "");
    LLVMValueRef val = LLVMBuildLoad2(b, f16, gep(b, f16, A, idx), "");
    LLVMBuildStore(b, val, gep(b, f16, LLVMBuildPointerCast(b, lds, lptr, ""), idx));
  }
  LLVMBuildCall2(b, bar_t, bar_f, NULL, 0, "");

  LLVMTypeRef v4h = LLVMVectorType(f16, 4), v4f = LLVMVectorType(f32, 4);
  LLVMValueRef av = LLVMGetUndef(v4h), bv = LLVMGetUndef(v4h);
  for (int i = 0; i < 4; i++) {
    LLVMValueRef ci = LLVMConstInt(i32, (unsigned)i, 0);
    LLVMValueRef kk = LLVMBuildAdd(b, quad, ci, "");
    LLVMValueRef a_idx = LLVMBuildAdd(b, LLVMBuildMul(b, row, c16, ""), kk, "");
    LLVMValueRef b_idx = LLVMBuildAdd(b, LLVMBuildMul(b, kk, c16, ""), row, "");
    av = LLVMBuildInsertElement(b, av, LLVMBuildLoad2(b, f16, gep(b, f16, lds, a_idx), ""), ci, "");
    bv = LLVMBuildInsertElement(b, bv, LLVMBuildLoad2(b, f16, gep(b, f16, B, b_idx), ""), ci, "");
  }
  LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
  LLVMValueRef args[] = {av, bv, LLVMConstNull(v4f), zero, zero, zero};
  LLVMValueRef d = LLVMBuildCall2(b, mfma_t, mfma_f, args, 6, "d");
  for (int i = 0; i < 4; i++) {
    LLVMValueRef ci = LLVMConstInt(i32, (unsigned)i, 0);
    LLVMValueRef r = LLVMBuildAdd(b, quad, ci, "");
    LLVMValueRef idx = LLVMBuildAdd(b, LLVMBuildMul(b, r, c16, ""), row, "");
    LLVMBuildStore(b, LLVMBuildExtractElement(b, d, ci, ""), gep(b, f32, C, idx));
  }
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);

  amdgpu_hsaco_options opts = {.mcpu = argv[1], .code_object_version = (unsigned)atoi(argv[2]),
                               .opt_level = 3};
  char *hsaco = NULL;
  size_t n = 0;
  cov_status st = amdgpu_hsaco_build(m, &opts, &hsaco, &n);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    return 1;
  }
  FILE *f = fopen(argv[3], "wb");
  int ok = f && fwrite(hsaco, 1, n, f) == n;
  if (f) ok &= fclose(f) == 0;
  free(hsaco);
  if (!ok) {
    fprintf(stderr, "%s: cannot write\n", argv[3]);
    return 1;
  }
  return 0;
}
