/* backends/nvptx/nvptx_target.c: the NVPTX target operations.
 *
 * mma.sync.m16n8k16 fragments (PTX ISA, "Matrix fragments for mma.m16n8k16"),
 * g = lane / 4, t = lane % 4:
 *   A (row): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
 *   B (col): b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]
 *   C:       c0,c1 = C[g][2t..2t+1], c2,c3 = C[g+8][2t..2t+1]
 * ldmatrix.x4 on the [m][k] A tile, lane l addressing row (l%8) + 8*((l/8)%2)
 * and column 8*(l/16), yields exactly a0..a3; ldmatrix.x2.trans on the [k][n]
 * B tile, lane l addressing k row (l%8) + 8*((l/8)%2), yields b0, b1. */
#include "backends/nvptx/nvptx_target.h"

#include <string.h>

#include "backends/nvptx/nvptx_ptx.h"

static LLVMValueRef sreg(gpu_gen *g, const char *name) { return gpu_call_intrinsic(g, name, NULL, 0, NULL, 0); }

static void nv_mark_kernel(gpu_gen *g, LLVMValueRef fn) {
  nvptx_mark_kernel(g->mod, fn);
  /* .maxntid lets ptxas give each thread the registers the tile needs */
  LLVMMetadataRef ops[3] = {
      LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->ctx, "maxntidx", 8),
      LLVMValueAsMetadata(LLVMConstInt(g->i32, (unsigned long long)g->plan->threads, 0))};
  LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations",
                              LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, ops, 3)));
  if (g->plan->tma && g->plan->ws_regs) {
    /* setmaxnreg needs the launch's register count fixed: what the
     * workgroup's threads may hold together, in multiples of 8 */
    unsigned regs = 65536u / (unsigned)g->plan->threads / 8u * 8u;
    LLVMMetadataRef r[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->ctx, "maxnreg", 7),
                            LLVMValueAsMetadata(LLVMConstInt(g->i32, regs > 255 ? 255 : regs, 0))};
    LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, r, 3)));
  }
}

static LLVMValueRef nv_thread_id(gpu_gen *g) { return sreg(g, "llvm.nvvm.read.ptx.sreg.tid.x"); }

static LLVMValueRef nv_block_id(gpu_gen *g, int dim) {
  static const char *names[3] = {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                                 "llvm.nvvm.read.ptx.sreg.ctaid.z"};
  return sreg(g, names[dim]);
}

static void nv_barrier(gpu_gen *g) { gpu_call_intrinsic(g, "llvm.nvvm.barrier0", NULL, 0, NULL, 0); }

static LLVMValueRef nv_shared_array(gpu_gen *g, unsigned bytes) {
  (void)bytes; /* dynamic: the launch passes the size */
  /* one declaration per module: a module's kernels share it */
  LLVMValueRef old = LLVMGetNamedGlobal(g->mod, "covenant_smem");
  if (old) return old;
  LLVMTypeRef t = LLVMArrayType2(g->i8, 0);
  LLVMValueRef v = LLVMAddGlobalInAddressSpace(g->mod, t, "covenant_smem", 3);
  LLVMSetLinkage(v, LLVMExternalLinkage);
  LLVMSetAlignment(v, 16);
  return v;
}

static void nv_async_copy16(gpu_gen *g, LLVMValueRef dst, LLVMValueRef src) {
  LLVMValueRef args[2] = {dst, src};
  gpu_call_intrinsic(g, "llvm.nvvm.cp.async.cg.shared.global.16", NULL, 0, args, 2);
}
/* cp.async.cg ... 16, src_size: src_size 0 reads nothing and zero-fills */
static void nv_async_copy16_zfill(gpu_gen *g, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef ok) {
  LLVMValueRef n = LLVMBuildSelect(g->b, ok, gpu_i32(g, 16), gpu_i32(g, 0), "");
  LLVMValueRef args[3] = {dst, src, n};
  gpu_call_intrinsic(g, "llvm.nvvm.cp.async.cg.shared.global.16.s", NULL, 0, args, 3);
}
static void nv_async_commit(gpu_gen *g) { gpu_call_intrinsic(g, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0); }
static void nv_async_wait(gpu_gen *g, int pending) {
  LLVMValueRef n = gpu_i32(g, pending);
  gpu_call_intrinsic(g, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
}

static LLVMValueRef mma_load_a(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, int k0) {
  LLVMValueRef l8 = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 8), "");
  LLVMValueRef hi = LLVMBuildAnd(g->b, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 8), ""), gpu_i32(g, 1), "");
  LLVMValueRef row = LLVMBuildAdd(g->b, row0, LLVMBuildAdd(g->b, l8, LLVMBuildMul(g->b, hi, gpu_i32(g, 8), ""), ""), "");
  LLVMValueRef col = LLVMBuildAdd(g->b, gpu_i32(g, k0),
                                  LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 16), ""), gpu_i32(g, 8), ""), "");
  LLVMValueRef p = gpu_tile_addr(g, a, row, col);
  return gpu_call_intrinsic(g, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", &g->sptr, 1, &p, 1);
}

static LLVMValueRef mma_load_b(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0) {
  LLVMValueRef l16 = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 16), "");
  LLVMValueRef row = LLVMBuildAdd(g->b, gpu_i32(g, k0), l16, "");
  LLVMValueRef p = gpu_tile_addr(g, b, row, col0);
  return gpu_call_intrinsic(g, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16", &g->sptr, 1, &p, 1);
}

/* ldmatrix.x4.trans: lanes 0-15 address k rows of the fragment at col0,
 * lanes 16-31 those at col0 + 8; registers 0,1 and 2,3 are the two b pairs */
static void mma_load_b2(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0, LLVMValueRef out[2]) {
  LLVMValueRef l16 = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 16), "");
  LLVMValueRef row = LLVMBuildAdd(g->b, gpu_i32(g, k0), l16, "");
  LLVMValueRef col = LLVMBuildAdd(g->b, col0, LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 16), ""),
                                                           gpu_i32(g, 8), ""), "");
  LLVMValueRef p = gpu_tile_addr(g, b, row, col);
  LLVMValueRef r = gpu_call_intrinsic(g, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16", &g->sptr, 1, &p, 1);
  LLVMTypeRef pair_t[2] = {g->i32, g->i32};
  LLVMTypeRef st = LLVMStructTypeInContext(g->ctx, pair_t, 2, 0);
  for (int h = 0; h < 2; h++) {
    LLVMValueRef v = LLVMGetUndef(st);
    v = LLVMBuildInsertValue(g->b, v, LLVMBuildExtractValue(g->b, r, (unsigned)(2 * h), ""), 0, "");
    v = LLVMBuildInsertValue(g->b, v, LLVMBuildExtractValue(g->b, r, (unsigned)(2 * h + 1), ""), 1, "");
    out[h] = v;
  }
}

static void mma_op(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *acc) {
  int bf = g->in_t == g->bf16;
  LLVMTypeRef v2h = LLVMVectorType(g->f16, 2);
  LLVMValueRef args[10];
  for (int i = 0; i < 4; i++) {
    LLVMValueRef x = LLVMBuildExtractValue(g->b, a, (unsigned)i, "");
    args[i] = bf ? x : LLVMBuildBitCast(g->b, x, v2h, "");
  }
  for (int i = 0; i < 2; i++) {
    LLVMValueRef x = LLVMBuildExtractValue(g->b, b, (unsigned)i, "");
    args[4 + i] = bf ? x : LLVMBuildBitCast(g->b, x, v2h, "");
  }
  for (int i = 0; i < 4; i++) args[6 + i] = acc[i];
  LLVMValueRef d = gpu_call_intrinsic(
      g, bf ? "llvm.nvvm.mma.m16n8k16.row.col.bf16" : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", NULL, 0, args, 10);
  for (int i = 0; i < 4; i++) acc[i] = LLVMBuildExtractValue(g->b, d, (unsigned)i, "");
}

static void mma_acc_coord(gpu_gen *g, int i, LLVMValueRef *row, LLVMValueRef *col) {
  LLVMValueRef grp = LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 4), "");
  LLVMValueRef t = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 4), "");
  *row = LLVMBuildAdd(g->b, grp, gpu_i32(g, i >= 2 ? 8 : 0), "");
  *col = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, t, gpu_i32(g, 2), ""), gpu_i32(g, i & 1), "");
}

/* ex2.approx.f32: relative error 2^-22, no libcall (LLVM 19's NVPTX has
 * none for llvm.exp2) */
static LLVMValueRef nv_exp2(gpu_gen *g, LLVMValueRef x) {
  return gpu_call_intrinsic(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &x, 1);
}

/* ex2.approx.ftz.f32: one MUFU.EX2, where the non-flushing form scales
 * around it for subnormal results */
static LLVMValueRef nv_exp2_ftz(gpu_gen *g, LLVMValueRef x) {
  return gpu_call_intrinsic(g, "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &x, 1);
}

/* cvt.rn.{f16,bf16}x2.f32 d, a, b puts a in the high half: one instruction
 * for two conversions and the pack */
static LLVMValueRef nv_pack_half2(gpu_gen *g, LLVMTypeRef t, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef args[2] = {y, x};
  const char *name = t == g->bf16 ? "llvm.nvvm.ff2bf16x2.rn" : "llvm.nvvm.ff2f16x2.rn";
  return LLVMBuildBitCast(g->b, gpu_call_intrinsic(g, name, NULL, 0, args, 2), g->i32, "");
}

/* dp4a.s32.s32 (sm_61 and later): c + four signed byte products, wrapping;
 * LLVM 19 has no NVVM intrinsic for it. A pure instruction: no side
 * effects, free to move or merge. */
static LLVMValueRef nv_dot4_i8(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMTypeRef at[3] = {g->i32, g->i32, g->i32};
  LLVMTypeRef ft = LLVMFunctionType(g->i32, at, 3, 0);
  static const char text[] = "dp4a.s32.s32 $0, $1, $2, $3;", cons[] = "=r,r,r,r";
  LLVMValueRef f = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 0, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef args[3] = {a, b, c};
  return LLVMBuildCall2(g->b, ft, f, args, 3, "");
}

static LLVMValueRef nv_shfl_xor(gpu_gen *g, LLVMValueRef x, int mask) {
  LLVMValueRef args[4] = {gpu_i32(g, -1), x, gpu_i32(g, mask), gpu_i32(g, 31)};
  return gpu_call_intrinsic(g, "llvm.nvvm.shfl.sync.bfly.f32", NULL, 0, args, 4);
}

static LLVMValueRef nv_lane_xor(gpu_gen *g, LLVMValueRef x, int mask) {
  LLVMValueRef args[4] = {gpu_i32(g, -1), x, gpu_i32(g, mask), gpu_i32(g, 31)};
  return gpu_call_intrinsic(g, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, args, 4);
}

static const gpu_frag_ops mma_m16n8k16 = {16, 8, 16, 4, mma_load_a, mma_load_b, mma_op, mma_acc_coord, mma_load_b2, 1};

/* f32 operands on the tensor cores as three tf32 products (3xTF32): each
 * operand x = big + small, big = tf32(x) (cvt.rna keeps 10 mantissa bits,
 * as f16 does, with f32's range), small = tf32(x - big); a·b is summed as
 * small_a·big_b + big_a·small_b + big_a·big_b, which keeps about 21 bits
 * of each operand (the small·small term lies below f32's own rounding).
 * One tf32 product alone would round like f16 operands; the precision plan
 * gives a group f32 operands exactly where that rounding costs accuracy.
 * mma.sync.m16n8k8 .tf32 fragments (PTX ISA, "Matrix fragments for
 * mma.m16n8k8"), g = lane / 4, t = lane % 4:
 *   A (row): a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
 *   B (col): b0 = B[t][g], b1 = B[t+4][g]
 *   C:       as m16n8k16's (mma_acc_coord).
 * A fragment is the vector <bigs, smalls>: split once per load, used by
 * every product of the warp tile. */
static LLVMValueRef tf32_split(gpu_gen *g, LLVMValueRef x, int n) {
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(g->i32, (unsigned)(2 * n)));
  for (int i = 0; i < n; i++) {
    LLVMValueRef xi = LLVMBuildExtractElement(g->b, x, gpu_i32(g, i), "");
    LLVMValueRef big = gpu_call_intrinsic(g, "llvm.nvvm.f2tf32.rna", NULL, 0, &xi, 1);
    LLVMValueRef rest = LLVMBuildFSub(g->b, xi, LLVMBuildBitCast(g->b, big, g->f32, ""), "");
    LLVMValueRef small = gpu_call_intrinsic(g, "llvm.nvvm.f2tf32.rna", NULL, 0, &rest, 1);
    v = LLVMBuildInsertElement(g->b, v, big, gpu_i32(g, i), "");
    v = LLVMBuildInsertElement(g->b, v, small, gpu_i32(g, n + i), "");
  }
  return v;
}

static LLVMValueRef tf32_load(gpu_gen *g, const gpu_tile *tile, LLVMValueRef row, LLVMValueRef col) {
  return LLVMBuildLoad2(g->b, g->f32, gpu_tile_addr(g, tile, row, col), "");
}

static LLVMValueRef tf32_load_a(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, int k0) {
  LLVMValueRef grp = LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 4), "");
  LLVMValueRef t = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 4), "");
  LLVMValueRef x = LLVMGetUndef(LLVMVectorType(g->f32, 4));
  for (int i = 0; i < 4; i++) {
    LLVMValueRef row = LLVMBuildAdd(g->b, row0, LLVMBuildAdd(g->b, grp, gpu_i32(g, i & 1 ? 8 : 0), ""), "");
    LLVMValueRef col = LLVMBuildAdd(g->b, t, gpu_i32(g, k0 + (i >= 2 ? 4 : 0)), "");
    x = LLVMBuildInsertElement(g->b, x, tf32_load(g, a, row, col), gpu_i32(g, i), "");
  }
  return tf32_split(g, x, 4);
}

static LLVMValueRef tf32_load_b(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0) {
  LLVMValueRef col = LLVMBuildAdd(g->b, col0, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 4), ""), "");
  LLVMValueRef t = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 4), "");
  LLVMValueRef x = LLVMGetUndef(LLVMVectorType(g->f32, 2));
  for (int i = 0; i < 2; i++) {
    LLVMValueRef row = LLVMBuildAdd(g->b, t, gpu_i32(g, k0 + 4 * i), "");
    x = LLVMBuildInsertElement(g->b, x, tf32_load(g, b, row, col), gpu_i32(g, i), "");
  }
  return tf32_split(g, x, 2);
}

static void tf32_mma(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *acc) {
  /* the small terms first, so that the big product adds to their sum */
  static const int a_part[3] = {1, 0, 0}, b_part[3] = {0, 1, 0};
  for (int term = 0; term < 3; term++) {
    LLVMValueRef args[10];
    for (int i = 0; i < 4; i++) args[i] = LLVMBuildExtractElement(g->b, a, gpu_i32(g, 4 * a_part[term] + i), "");
    for (int i = 0; i < 2; i++) args[4 + i] = LLVMBuildExtractElement(g->b, b, gpu_i32(g, 2 * b_part[term] + i), "");
    for (int i = 0; i < 4; i++) args[6 + i] = acc[i];
    LLVMValueRef d = gpu_call_intrinsic(g, "llvm.nvvm.mma.m16n8k8.row.col.tf32", NULL, 0, args, 10);
    for (int i = 0; i < 4; i++) acc[i] = LLVMBuildExtractValue(g->b, d, (unsigned)i, "");
  }
}

static const gpu_frag_ops mma_tf32x3 = {16, 8, 8, 4, tf32_load_a, tf32_load_b, tf32_mma, mma_acc_coord, NULL, 1};

/* Warpgroup MMA (sm_90a). LLVM 19 has no intrinsic for wgmma.mma_async, so
 * the instructions are inline PTX; the accumulators pass through every
 * statement as tied operands ("=f" outputs tied to inputs), which keeps
 * LLVM from reading or copying them between the issue and the wait.
 * Result layout (PTX ISA, "wgmma register fragments"): warp w of the
 * warpgroup holds rows 16w .. 16w+15; value 4j + i of a lane is the m16n8
 * accumulator element i of columns 8j .. 8j+7 (mma_acc_coord). */
enum { WG_MAX_OPS = 136 };

static LLVMValueRef nv_asm(gpu_gen *g, LLVMTypeRef ret, const char *text, const char *cons, LLVMValueRef *args,
                           int n) {
  LLVMTypeRef at[WG_MAX_OPS];
  for (int i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef ft = LLVMFunctionType(ret, at, (unsigned)n, 0);
  LLVMValueRef a = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(g->b, ft, a, args, (unsigned)n, "");
  /* warpgroup-collective: never made conditional or duplicated */
  const char *cv = "convergent";
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateEnumAttribute(g->ctx, LLVMGetEnumAttributeKindForName(cv, strlen(cv)), 0));
  return call;
}

static void nv_asm0(gpu_gen *g, const char *text) {
  nv_asm(g, LLVMVoidTypeInContext(g->ctx), text, "~{memory}", NULL, 0);
}

/* A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
 * start address, leading and stride byte offsets, all >> 4; layout 1 =
 * 128-byte swizzle, base offset 0 (the tiles are 1024-byte aligned). */
static LLVMValueRef wg_desc(gpu_gen *g, LLVMValueRef ptr, unsigned lbo, unsigned sbo) {
  LLVMValueRef addr = LLVMBuildPtrToInt(g->b, ptr, g->i64, "");
  addr = LLVMBuildLShr(g->b, LLVMBuildAnd(g->b, addr, LLVMConstInt(g->i64, 0x3ffff, 0), ""),
                       LLVMConstInt(g->i64, 4, 0), "");
  unsigned long long bits = (unsigned long long)(lbo >> 4) << 16 | (unsigned long long)(sbo >> 4) << 32 | 1ull << 62;
  return LLVMBuildOr(g->b, addr, LLVMConstInt(g->i64, bits, 0), "");
}

/* "=f" x n, then `mid` (inputs), the n tied inputs "0" .. "n-1", and a
 * memory clobber */
static void tied_constraints(char *buf, size_t size, int n, const char *mid) {
  size_t len = 0;
  for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, size - len, "%s=f", i ? "," : "");
  len += (size_t)snprintf(buf + len, size - len, "%s", mid);
  for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, size - len, ",%d", i);
  snprintf(buf + len, size - len, ",~{memory}");
}

static LLVMTypeRef acc_struct(gpu_gen *g, int n) {
  LLVMTypeRef f[WG_MAX_OPS];
  for (int i = 0; i < n; i++) f[i] = g->f32;
  return LLVMStructTypeInContext(g->ctx, f, (unsigned)n, 0);
}

/* A: K-major, 128-byte rows, core-matrix groups of 8 rows 1024 bytes apart
 * (SBO; LBO unused with the swizzle). B: N-major slabs of 64 columns,
 * 8-row groups 1024 bytes apart (SBO), slabs rows*128 bytes apart (LBO).
 * row0 and col0 are multiples of 8 and 64 and k0 of 16, so the start
 * addresses are the unswizzled ones the instruction expects. */
static void nv_wg_mma(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, const gpu_tile *b, LLVMValueRef col0, int k0,
                      int n, LLVMValueRef *acc) {
  int na = n / 2;
  LLVMValueRef da = wg_desc(g, gpu_tile_addr(g, a, row0, gpu_i32(g, k0)), 16, 1024);
  LLVMValueRef db = wg_desc(g, gpu_tile_addr(g, b, gpu_i32(g, k0), col0), (unsigned)b->rows * 128u, 1024);
  const char *ty = g->in_t == g->bf16 ? "bf16" : "f16";
  char text[2048], cons[2048];
  size_t len = (size_t)snprintf(text, sizeof text,
                                "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n"
                                "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                                na + 2, n, ty, ty);
  for (int i = 0; i < na; i++) len += (size_t)snprintf(text + len, sizeof text - len, "%s$%d", i ? ", " : "", i);
  snprintf(text + len, sizeof text - len, "}, $%d, $%d, p, 1, 1, 0, 1;\n}", na, na + 1);
  tied_constraints(cons, sizeof cons, na, ",l,l,r");
  LLVMValueRef args[WG_MAX_OPS];
  args[0] = da, args[1] = db, args[2] = gpu_i32(g, 1);
  for (int i = 0; i < na; i++) args[3 + i] = acc[i];
  LLVMValueRef r = nv_asm(g, acc_struct(g, na), text, cons, args, na + 3);
  for (int i = 0; i < na; i++) acc[i] = LLVMBuildExtractValue(g->b, r, (unsigned)i, "");
}

/* The fused attention's two warpgroup products (tiles of 128-byte rows,
 * 1024-byte aligned, as above). S = Q K^T: B read K-major (b's rows are
 * B's columns, the layout of A: SBO = 8 rows, transpose-b 0), n columns
 * from b's row n0. O += P V: A from registers (a[4], the lane's m16n8k16
 * A fragment of its warp's 16 rows), B a 64-column N-major slab tile. */
static void wg_asm(gpu_gen *g, const char *head, const char *tail, int na, LLVMValueRef *in, int n_in,
                   const char *in_cons, LLVMValueRef *acc) {
  char text[2048], cons[2048];
  size_t len = (size_t)snprintf(text, sizeof text, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n%s {", na + n_in - 1, head);
  for (int i = 0; i < na; i++) len += (size_t)snprintf(text + len, sizeof text - len, "%s$%d", i ? ", " : "", i);
  snprintf(text + len, sizeof text - len, "}, %s;\n}", tail);
  tied_constraints(cons, sizeof cons, na, in_cons);
  LLVMValueRef args[WG_MAX_OPS];
  for (int i = 0; i < n_in; i++) args[i] = in[i];
  for (int i = 0; i < na; i++) args[n_in + i] = acc[i];
  LLVMValueRef r = nv_asm(g, acc_struct(g, na), text, cons, args, na + n_in);
  for (int i = 0; i < na; i++) acc[i] = LLVMBuildExtractValue(g->b, r, (unsigned)i, "");
}

static void nv_wg_mma_bt(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, const gpu_tile *b, LLVMValueRef n0, int k0,
                         int n, LLVMValueRef *acc) {
  int na = n / 2;
  LLVMValueRef in[3] = {wg_desc(g, gpu_tile_addr(g, a, row0, gpu_i32(g, k0)), 16, 1024),
                        wg_desc(g, gpu_tile_addr(g, b, n0, gpu_i32(g, k0)), 16, 1024),
                        gpu_i32(g, !LLVMIsUndef(acc[0]))};
  const char *ty = g->in_t == g->bf16 ? "bf16" : "f16";
  char head[128], tail[64];
  snprintf(head, sizeof head, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", n, ty, ty);
  snprintf(tail, sizeof tail, "$%d, $%d, p, 1, 1, 0, 0", na, na + 1);
  wg_asm(g, head, tail, na, in, 3, ",l,l,r", acc);
}

static void nv_wg_mma_ra(gpu_gen *g, LLVMValueRef a, const gpu_tile *b, int k0, int n, LLVMValueRef *acc) {
  int na = n / 2;
  LLVMValueRef in[6];
  for (int i = 0; i < 4; i++) in[i] = LLVMBuildExtractValue(g->b, a, (unsigned)i, "");
  in[4] = wg_desc(g, gpu_tile_addr(g, b, gpu_i32(g, k0), gpu_i32(g, 0)), (unsigned)b->rows * 128u, 1024);
  in[5] = gpu_i32(g, 1);
  const char *ty = g->in_t == g->bf16 ? "bf16" : "f16";
  char head[128], tail[96];
  snprintf(head, sizeof head, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", n, ty, ty);
  snprintf(tail, sizeof tail, "{$%d, $%d, $%d, $%d}, $%d, p, 1, 1, 1", na, na + 1, na + 2, na + 3, na + 4);
  wg_asm(g, head, tail, na, in, 6, ",r,r,r,r,l,r", acc);
}

static void nv_wg_fence(gpu_gen *g) { nv_asm0(g, "wgmma.fence.sync.aligned;"); }
static void nv_wg_commit(gpu_gen *g) { nv_asm0(g, "wgmma.commit_group.sync.aligned;"); }
static void nv_async_proxy_fence(gpu_gen *g) { nv_asm0(g, "fence.proxy.async.shared::cta;"); }
/* what CUDA's __threadfence() emits (LLVM 19's NVPTX selects no fence
 * instruction) */
static void nv_device_fence(gpu_gen *g) { nv_asm0(g, "fence.sc.gpu;"); }

static void nv_wg_wait(gpu_gen *g, int pending, LLVMValueRef *acc, int n) {
  char text[64], cons[2048];
  snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
  tied_constraints(cons, sizeof cons, n, "");
  LLVMValueRef r = nv_asm(g, acc_struct(g, n), text, cons, acc, n);
  for (int i = 0; i < n; i++) acc[i] = LLVMBuildExtractValue(g->b, r, (unsigned)i, "");
}

/* Transaction barriers and bulk tensor copies (PTX ISA 8.0, sm_90): inline
 * PTX too (LLVM 19 has no intrinsics for them). Shared addresses are passed
 * as 32-bit shared-window offsets ("r"), the tensor map as its 64-bit
 * global address, which generic addressing reads as well. Labels inside a
 * { } block are local to it, so the wait loop may be inlined many times. */
static LLVMValueRef shared32(gpu_gen *g, LLVMValueRef p) { return LLVMBuildPtrToInt(g->b, p, g->i32, ""); }

static void nv_mbar_init(gpu_gen *g, LLVMValueRef bar, int count) {
  LLVMValueRef args[2] = {shared32(g, bar), gpu_i32(g, count)};
  nv_asm(g, LLVMVoidTypeInContext(g->ctx), "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", args, 2);
}
static void nv_mbar_init_fence(gpu_gen *g) { nv_asm0(g, "fence.mbarrier_init.release.cluster;"); }

static void nv_mbar_wait(gpu_gen *g, LLVMValueRef bar, LLVMValueRef parity) {
  LLVMValueRef args[2] = {shared32(g, bar), parity};
  nv_asm(g, LLVMVoidTypeInContext(g->ctx),
         "{\n.reg .pred p;\ncov_mbar_wait:\nmbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n@!p bra cov_mbar_wait;\n}",
         "r,r,~{memory}", args, 2);
}
static void nv_mbar_arrive(gpu_gen *g, LLVMValueRef bar) {
  LLVMValueRef a = shared32(g, bar);
  nv_asm(g, LLVMVoidTypeInContext(g->ctx), "{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [$0];\n}",
         "r,~{memory}", &a, 1);
}
static void nv_mbar_expect_tx(gpu_gen *g, LLVMValueRef bar, int bytes) {
  LLVMValueRef args[2] = {shared32(g, bar), gpu_i32(g, bytes)};
  nv_asm(g, LLVMVoidTypeInContext(g->ctx),
         "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;\n}", "r,r,~{memory}", args, 2);
}
static void nv_tma_load_2d(gpu_gen *g, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef c0, LLVMValueRef c1,
                           LLVMValueRef bar) {
  LLVMValueRef args[5] = {shared32(g, dst), LLVMBuildPtrToInt(g->b, map, g->i64, ""), c0, c1, shared32(g, bar)};
  nv_asm(g, LLVMVoidTypeInContext(g->ctx),
         "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
         "r,l,r,r,r,~{memory}", args, 5);
}
static void nv_tma_prefetch(gpu_gen *g, LLVMValueRef map) {
  LLVMValueRef a = LLVMBuildPtrToInt(g->b, map, g->i64, "");
  nv_asm(g, LLVMVoidTypeInContext(g->ctx), "prefetch.tensormap [$0];", "l,~{memory}", &a, 1);
}
static void nv_named_barrier(gpu_gen *g, LLVMValueRef id, int count, int arrive_only) {
  char text[64];
  snprintf(text, sizeof text, "bar.%s $0, %d;", arrive_only ? "arrive" : "sync", count);
  nv_asm(g, LLVMVoidTypeInContext(g->ctx), text, "r,~{memory}", &id, 1);
}
static void nv_set_max_regs(gpu_gen *g, int regs, int increase) {
  char text[64];
  snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", increase ? "inc" : "dec", regs);
  nv_asm0(g, text);
}

static const gpu_frag_ops *nv_matrix_frag(const gpu_plan *p) {
  if ((p->prob.in_dtype == COV_F16 || p->prob.in_dtype == COV_BF16) && p->fm == 16 && p->fn == 8 &&
      p->fk == 16)
    return &mma_m16n8k16;
  if (p->prob.in_dtype == COV_F32 && p->fm == 16 && p->fn == 8 && p->fk == 8) return &mma_tf32x3;
  return NULL;
}

static int nv_matrix_shapes(cov_dtype in, int (*out)[3], int max) {
  if ((in != COV_F16 && in != COV_BF16 && in != COV_F32) || max < 1) return 0;
  out[0][0] = 16, out[0][1] = 8, out[0][2] = in == COV_F32 ? 8 : 16;
  return 1;
}

const gpu_target_ops nvptx_target_ops = {
    .name = "nvptx",
    .global_as = 1,
    .shared_as = 3,
    .mark_kernel = nv_mark_kernel,
    .thread_id = nv_thread_id,
    .block_id = nv_block_id,
    .barrier = nv_barrier,
    .shared_array = nv_shared_array,
    .async_copy16 = nv_async_copy16,
    .async_copy16_zfill = nv_async_copy16_zfill,
    .async_commit = nv_async_commit,
    .async_wait = nv_async_wait,
    .exp2 = nv_exp2,
    .exp2_ftz = nv_exp2_ftz,
    .pack_half2 = nv_pack_half2,
    .shfl_xor = nv_shfl_xor,
    .lane_xor = nv_lane_xor,
    .dot4_i8 = nv_dot4_i8,
    .matrix_frag = nv_matrix_frag,
    .matrix_shapes = nv_matrix_shapes,
    .wg_mma = nv_wg_mma,
    .wg_fence = nv_wg_fence,
    .wg_commit = nv_wg_commit,
    .wg_wait = nv_wg_wait,
    .async_proxy_fence = nv_async_proxy_fence,
    .device_fence = nv_device_fence,
    .wg_acc = &mma_m16n8k16,
    .wg_mma_bt = nv_wg_mma_bt,
    .wg_mma_ra = nv_wg_mma_ra,
    .mbar_init = nv_mbar_init,
    .mbar_init_fence = nv_mbar_init_fence,
    .mbar_wait = nv_mbar_wait,
    .mbar_arrive = nv_mbar_arrive,
    .mbar_expect_tx = nv_mbar_expect_tx,
    .tma_load_2d = nv_tma_load_2d,
    .set_max_regs = nv_set_max_regs,
    .named_barrier = nv_named_barrier,
    .tma_prefetch = nv_tma_prefetch,
};
