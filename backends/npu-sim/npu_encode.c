/* backends/npu-sim/npu_encode.c: the binary program format (ISA.md) in both
 * directions. The decoder trusts nothing: every read is bounds-checked and
 * every error names the byte offset, the instruction index and the field.
 * Semantic checks against an ACG are npu_verify.c's job.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"

static const struct {
  uint8_t op;
  const char *name;
  uint32_t size;
} k_ops[] = {
    {NPU_OP_NOP, "nop", 8},      {NPU_OP_BARRIER, "barrier", 8}, {NPU_OP_SYNC, "sync", 8},
    {NPU_OP_SETR, "setr", 24},
    {NPU_OP_ADDR, "addr", 24},   {NPU_OP_LOOP, "loop", 16},      {NPU_OP_DMA, "dma", 120},
    {NPU_OP_GEMM, "gemm", 88},   {NPU_OP_VOP, "vop", 72},
};

uint32_t npu_insn_size(uint8_t op) {
  for (size_t i = 0; i < sizeof k_ops / sizeof *k_ops; i++)
    if (k_ops[i].op == op) return k_ops[i].size;
  return 0;
}

uint32_t npu_insn_bytes(const npu_insn *in) {
  uint32_t n = npu_insn_size(in->op);
  if (in->op == NPU_OP_GEMM && (in->flags & NPU_GEMM_KDIG)) n += NPU_GEMM_KDIG_BYTES;
  if (in->op == NPU_OP_GEMM && (in->flags & NPU_GEMM_MDIG)) n += NPU_GEMM_MDIG_BYTES;
  if (in->op == NPU_OP_VOP && (in->flags & NPU_VOP_ROWRED)) n += NPU_VOP_RSUM_BYTES;
  return n;
}

int64_t npu_gemm_moff(const npu_insn *in, bool a, uint32_t i) {
  const npu_mem *m = a ? &in->u.gemm.a : &in->u.gemm.c;
  if (!(in->flags & NPU_GEMM_MDIG)) return (int64_t)i * m->row_stride;
  uint32_t r = in->u.gemm.mrad ? in->u.gemm.mrad : 1;
  return (int64_t)(i % r) * m->row_stride + (int64_t)(i / r) * (a ? in->u.gemm.ma : in->u.gemm.mc);
}

int64_t npu_gemm_koff(const npu_insn *in, bool a, uint32_t j) {
  const npu_mem *m = a ? &in->u.gemm.a : &in->u.gemm.b;
  int64_t s0 = a ? m->col_stride : m->row_stride;
  if (!(in->flags & NPU_GEMM_KDIG)) return (int64_t)j * s0;
  const int32_t *sx = a ? in->u.gemm.ka : in->u.gemm.kb;
  uint64_t r0 = in->u.gemm.krad[0] ? in->u.gemm.krad[0] : 1, r1 = in->u.gemm.krad[1] ? in->u.gemm.krad[1] : 1;
  uint64_t J = (uint64_t)in->u.gemm.k0 + j;
  return (int64_t)(J % r0) * s0 + (int64_t)(J / r0 % r1) * sx[0] + (int64_t)(J / (r0 * r1)) * sx[1];
}

const char *npu_opcode_name(uint8_t op) {
  for (size_t i = 0; i < sizeof k_ops / sizeof *k_ops; i++)
    if (k_ops[i].op == op) return k_ops[i].name;
  return "?";
}

const char *npu_role_name(uint8_t role) {
  switch (role) {
    case NPU_ROLE_INPUT: return "input";
    case NPU_ROLE_OUTPUT: return "output";
    case NPU_ROLE_WEIGHT: return "weight";
    case NPU_ROLE_SCRATCH: return "scratch";
    default: return "?";
  }
}

/* ---- writing: a growable byte buffer ---- */

typedef struct wbuf {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} wbuf;

static void put(wbuf *w, const void *src, size_t n) {
  if (w->oom) return;
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 4096;
    while (cap < w->n + n) cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
      w->oom = true;
      return;
    }
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->n, src, n);
  w->n += n;
}
/* Little-endian stores, independent of the host's byte order. */
static void put_u(wbuf *w, uint64_t v, int bytes) {
  uint8_t b[8];
  for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> (8 * i));
  put(w, b, (size_t)bytes);
}
static void put_zero(wbuf *w, int bytes) { put_u(w, 0, bytes); }
static void put_f32(wbuf *w, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put_u(w, u, 4);
}
static void put_mem(wbuf *w, const npu_mem *m) {
  put_u(w, m->buf, 1);
  put_u(w, m->reg, 1);
  put_zero(w, 2);
  put_u(w, m->off, 4);
  put_u(w, (uint32_t)m->row_stride, 4);
  put_u(w, (uint32_t)m->col_stride, 4);
}

static void put_insn(wbuf *w, const npu_insn *in) {
  put_u(w, in->op, 1);
  put_u(w, in->unit, 1);
  put_u(w, in->flags, 2);
  put_u(w, npu_insn_bytes(in), 4);
  switch (in->op) {
    case NPU_OP_SETR:
    case NPU_OP_ADDR:
      put_u(w, in->u.r.reg, 1);
      put_zero(w, 7);
      put_u(w, (uint64_t)in->u.r.imm, 8);
      break;
    case NPU_OP_LOOP:
      put_u(w, in->u.loop.count, 4);
      put_u(w, in->u.loop.body, 4);
      break;
    case NPU_OP_DMA:
      put_u(w, in->u.dma.dtype, 1);
      put_u(w, in->u.dma.rank, 1);
      put_u(w, in->u.dma.dram_reg, 1);
      put_u(w, in->u.dma.local_reg, 1);
      put_u(w, in->u.dma.local_off, 4);
      put_u(w, in->u.dma.dram_off, 8);
      for (int d = 0; d < NPU_DMA_MAX_RANK; d++) {
        const npu_dma_dim *dd = &in->u.dma.dim[d];
        put_u(w, dd->count, 4);
        put_u(w, (uint32_t)dd->step, 4);
        put_u(w, (uint32_t)dd->start, 4);
        put_u(w, dd->extent, 4);
        put_u(w, dd->dram_stride, 4);
        put_u(w, dd->local_stride, 4);
      }
      break;
    case NPU_OP_GEMM:
      put_u(w, in->u.gemm.cap, 1);
      put_zero(w, 1);
      put_u(w, in->u.gemm.k, 2);
      put_u(w, in->u.gemm.n, 2);
      put_zero(w, 2);
      put_u(w, in->u.gemm.m, 4);
      put_zero(w, 4);
      put_mem(w, &in->u.gemm.a);
      put_mem(w, &in->u.gemm.b);
      put_mem(w, &in->u.gemm.c);
      put_mem(w, &in->u.gemm.bias);
      if (in->flags & NPU_GEMM_KDIG) {
        put_u(w, in->u.gemm.k0, 2);
        put_u(w, in->u.gemm.krad[0], 2);
        put_u(w, in->u.gemm.krad[1], 2);
        put_zero(w, 2);
        for (int d = 0; d < 2; d++) put_u(w, (uint32_t)in->u.gemm.ka[d], 4);
        for (int d = 0; d < 2; d++) put_u(w, (uint32_t)in->u.gemm.kb[d], 4);
      }
      if (in->flags & NPU_GEMM_MDIG) {
        put_u(w, in->u.gemm.mrad, 2);
        put_zero(w, 2);
        put_u(w, (uint32_t)in->u.gemm.ma, 4);
        put_u(w, (uint32_t)in->u.gemm.mc, 4);
        put_zero(w, 4);
      }
      break;
    case NPU_OP_VOP:
      put_u(w, in->u.vop.vop, 1);
      put_u(w, in->u.vop.cap, 1);
      put_u(w, in->u.vop.dtype_in, 1);
      put_u(w, in->u.vop.dtype_out, 1);
      put_f32(w, in->u.vop.imm);
      put_u(w, in->u.vop.rows, 4);
      put_u(w, in->u.vop.cols, 4);
      put_mem(w, &in->u.vop.dst);
      put_mem(w, &in->u.vop.src1);
      put_mem(w, &in->u.vop.src2);
      if (in->flags & NPU_VOP_ROWRED) put_mem(w, &in->u.vop.sum);
      break;
    default: break; /* NOP, BARRIER: head only */
  }
}

cov_status npu_encode(const npu_prog *p, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  wbuf w = {0};
  size_t code_bytes = 0;
  for (uint32_t i = 0; i < p->n_insns; i++) {
    uint32_t sz = npu_insn_bytes(&p->insns[i]);
    if (!sz)
      return cov_error(COV_INTERNAL, COV_AT(NULL, p->acg_name), "instruction %u: unknown opcode 0x%02x", i,
                       p->insns[i].op);
    code_bytes += sz;
  }
  uint32_t cores = npu_prog_cores(p);
  put(&w, NPU_MAGIC, 4);
  put_u(&w, cores > 1 ? NPU_VERSION_CORES : NPU_VERSION, 2);
  put_u(&w, cores > 1 ? cores : 0, 2);
  put_u(&w, p->acg_digest, 8);
  put(&w, p->acg_name, NPU_NAME_MAX);
  put_u(&w, p->n_insns, 4);
  put_u(&w, p->n_tensors, 4);
  put_u(&w, p->n_segs, 4);
  put_zero(&w, 4);
  put_u(&w, p->dram_bytes, 8);
  put_u(&w, code_bytes, 8);
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const npu_tensor *t = &p->tensors[i];
    put(&w, t->name, NPU_NAME_MAX);
    put_u(&w, t->addr, 8);
    put_u(&w, t->bytes, 8);
    put_u(&w, t->dtype, 1);
    put_u(&w, t->role, 1);
    put_u(&w, t->rank, 1);
    put_zero(&w, 5);
    for (int d = 0; d < NPU_TENSOR_MAX_RANK; d++) put_u(&w, t->dims[d], 4);
  }
  for (uint32_t c = 0; cores > 1 && c < cores; c++) {
    put_u(&w, p->core_first[c + 1] - p->core_first[c], 4);
    put_zero(&w, 4);
  }
  for (uint32_t i = 0; i < p->n_insns; i++) put_insn(&w, &p->insns[i]);
  for (uint32_t i = 0; i < p->n_segs; i++) {
    put_u(&w, p->segs[i].addr, 8);
    put_u(&w, p->segs[i].bytes, 8);
    put(&w, p->segs[i].data, (size_t)p->segs[i].bytes);
    put_zero(&w, (int)((8 - p->segs[i].bytes % 8) % 8));
  }
  if (w.oom) {
    free(w.p);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory encoding an NPU program");
  }
  *out = w.p;
  *out_size = w.n;
  return NULL;
}

/* ---- reading ---- */

typedef struct rd {
  const uint8_t *p;
  size_t n, pos;
  const char *file;
} rd;

static cov_status rd_need(rd *r, size_t n, const char *what) {
  if (r->n - r->pos < n) {
    cov_loc loc = {r->file, 0, 0, NULL};
    return cov_error(COV_PARSE_ERROR, &loc,
                     "truncated program: %s needs %zu bytes at offset %zu, only %zu left", what,
                     n, r->pos, r->n - r->pos);
  }
  return NULL;
}
static uint64_t get_u(rd *r, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
  r->pos += (size_t)bytes;
  return v;
}
static void get_mem(rd *r, npu_mem *m) {
  m->buf = (uint8_t)get_u(r, 1);
  m->reg = (uint8_t)get_u(r, 1);
  r->pos += 2;
  m->off = (uint32_t)get_u(r, 4);
  m->row_stride = (int32_t)(uint32_t)get_u(r, 4);
  m->col_stride = (int32_t)(uint32_t)get_u(r, 4);
}

static cov_status get_insn(rd *r, uint32_t index, npu_insn *in) {
  char what[64];
  snprintf(what, sizeof what, "instruction %u", index);
  COV_RETURN_IF_ERROR(rd_need(r, NPU_INSN_HEAD_BYTES, what));
  size_t at = r->pos;
  cov_loc loc = {r->file, 0, 0, NULL};
  memset(in, 0, sizeof *in);
  in->op = (uint8_t)get_u(r, 1);
  in->unit = (uint8_t)get_u(r, 1);
  in->flags = (uint16_t)get_u(r, 2);
  uint32_t size = (uint32_t)get_u(r, 4);
  uint32_t want = npu_insn_bytes(in);
  if (!want)
    return cov_error(COV_INVALID_INPUT, &loc,
                     "instruction %u (offset %zu): field opcode: unknown opcode 0x%02x", index, at,
                     in->op);
  if (size != want)
    return cov_error(COV_INVALID_INPUT, &loc,
                     "instruction %u (offset %zu, %s): field size: %u bytes, expected %u", index,
                     at, npu_opcode_name(in->op), size, want);
  COV_RETURN_IF_ERROR(rd_need(r, want - NPU_INSN_HEAD_BYTES, what));
  switch (in->op) {
    case NPU_OP_SETR:
    case NPU_OP_ADDR:
      in->u.r.reg = (uint8_t)get_u(r, 1);
      r->pos += 7;
      in->u.r.imm = (int64_t)get_u(r, 8);
      break;
    case NPU_OP_LOOP:
      in->u.loop.count = (uint32_t)get_u(r, 4);
      in->u.loop.body = (uint32_t)get_u(r, 4);
      break;
    case NPU_OP_DMA:
      in->u.dma.dtype = (uint8_t)get_u(r, 1);
      in->u.dma.rank = (uint8_t)get_u(r, 1);
      in->u.dma.dram_reg = (uint8_t)get_u(r, 1);
      in->u.dma.local_reg = (uint8_t)get_u(r, 1);
      in->u.dma.local_off = (uint32_t)get_u(r, 4);
      in->u.dma.dram_off = get_u(r, 8);
      for (int d = 0; d < NPU_DMA_MAX_RANK; d++) {
        npu_dma_dim *dd = &in->u.dma.dim[d];
        dd->count = (uint32_t)get_u(r, 4);
        dd->step = (int32_t)(uint32_t)get_u(r, 4);
        dd->start = (int32_t)(uint32_t)get_u(r, 4);
        dd->extent = (uint32_t)get_u(r, 4);
        dd->dram_stride = (uint32_t)get_u(r, 4);
        dd->local_stride = (uint32_t)get_u(r, 4);
      }
      break;
    case NPU_OP_GEMM:
      in->u.gemm.cap = (uint8_t)get_u(r, 1);
      r->pos += 1;
      in->u.gemm.k = (uint16_t)get_u(r, 2);
      in->u.gemm.n = (uint16_t)get_u(r, 2);
      r->pos += 2;
      in->u.gemm.m = (uint32_t)get_u(r, 4);
      r->pos += 4;
      get_mem(r, &in->u.gemm.a);
      get_mem(r, &in->u.gemm.b);
      get_mem(r, &in->u.gemm.c);
      get_mem(r, &in->u.gemm.bias);
      if (in->flags & NPU_GEMM_KDIG) {
        in->u.gemm.k0 = (uint16_t)get_u(r, 2);
        in->u.gemm.krad[0] = (uint16_t)get_u(r, 2);
        in->u.gemm.krad[1] = (uint16_t)get_u(r, 2);
        r->pos += 2;
        for (int d = 0; d < 2; d++) in->u.gemm.ka[d] = (int32_t)(uint32_t)get_u(r, 4);
        for (int d = 0; d < 2; d++) in->u.gemm.kb[d] = (int32_t)(uint32_t)get_u(r, 4);
      }
      if (in->flags & NPU_GEMM_MDIG) {
        in->u.gemm.mrad = (uint16_t)get_u(r, 2);
        r->pos += 2;
        in->u.gemm.ma = (int32_t)(uint32_t)get_u(r, 4);
        in->u.gemm.mc = (int32_t)(uint32_t)get_u(r, 4);
        r->pos += 4;
      }
      break;
    case NPU_OP_VOP: {
      in->u.vop.vop = (uint8_t)get_u(r, 1);
      in->u.vop.cap = (uint8_t)get_u(r, 1);
      in->u.vop.dtype_in = (uint8_t)get_u(r, 1);
      in->u.vop.dtype_out = (uint8_t)get_u(r, 1);
      uint32_t u = (uint32_t)get_u(r, 4);
      memcpy(&in->u.vop.imm, &u, 4);
      in->u.vop.rows = (uint32_t)get_u(r, 4);
      in->u.vop.cols = (uint32_t)get_u(r, 4);
      get_mem(r, &in->u.vop.dst);
      get_mem(r, &in->u.vop.src1);
      get_mem(r, &in->u.vop.src2);
      if (in->flags & NPU_VOP_ROWRED) get_mem(r, &in->u.vop.sum);
      break;
    }
    default: break;
  }
  return NULL;
}

/* The core table (format NPU_VERSION_CORES): each core's instruction
 * count, which must add up to the header's. */
static cov_status decode_cores(rd *r, npu_prog *p, uint32_t n_cores, uint32_t n_insns) {
  cov_loc loc = {r->file, 0, 0, NULL};
  if (n_cores < 2) return NULL;
  COV_RETURN_IF_ERROR(rd_need(r, (size_t)n_cores * NPU_CORE_BYTES, "the core table"));
  uint64_t sum = 0;
  p->n_cores = n_cores;
  for (uint32_t c = 0; c < n_cores; c++) {
    size_t at = r->pos;
    uint32_t n = (uint32_t)get_u(r, 4);
    uint32_t pad = (uint32_t)get_u(r, 4);
    if (pad)
      return cov_error(COV_INVALID_INPUT, &loc, "core %u (offset %zu): field reserved: %u, must be 0",
                       c, at + 4, pad);
    p->core_first[c] = (uint32_t)sum;
    sum += n;
    if (sum > n_insns)
      return cov_error(COV_INVALID_INPUT, &loc,
                       "core %u (offset %zu): field n_insns: the cores' instructions pass the "
                       "header's %u",
                       c, at, n_insns);
  }
  if (sum != n_insns)
    return cov_error(COV_INVALID_INPUT, &loc,
                     "core table: the cores' instructions add up to %llu, the header says %u",
                     (unsigned long long)sum, n_insns);
  p->core_first[n_cores] = n_insns;
  return NULL;
}

/* The tensor table: n entries, their size checked against what is left
 * before anything is allocated. */
static cov_status decode_tensors(rd *r, npu_prog *p, uint32_t n_tensors) {
  cov_loc loc = {r->file, 0, 0, NULL};
  COV_RETURN_IF_ERROR(rd_need(r, (size_t)n_tensors * NPU_TENSOR_BYTES, "the tensor table"));
  for (uint32_t i = 0; i < n_tensors; i++) {
    npu_tensor t = {0};
    memcpy(t.name, r->p + r->pos, NPU_NAME_MAX);
    r->pos += NPU_NAME_MAX;
    t.addr = get_u(r, 8);
    t.bytes = get_u(r, 8);
    t.dtype = (uint8_t)get_u(r, 1);
    t.role = (uint8_t)get_u(r, 1);
    t.rank = (uint8_t)get_u(r, 1);
    r->pos += 5;
    for (int d = 0; d < NPU_TENSOR_MAX_RANK; d++) t.dims[d] = (uint32_t)get_u(r, 4);
    if (t.name[NPU_NAME_MAX - 1] != '\0')
      return cov_error(COV_INVALID_INPUT, &loc, "tensor %u: field name: not NUL-terminated", i);
    COV_RETURN_IF_ERROR(npu_prog_add_tensor(p, &t));
  }
  return NULL;
}

/* The n_insns instructions, which take exactly code_bytes bytes (checked
 * against what is left by the caller). */
static cov_status decode_code(rd *r, npu_prog *p, uint32_t n_insns, uint64_t code_bytes) {
  cov_loc loc = {r->file, 0, 0, NULL};
  size_t code_end = r->pos + (size_t)code_bytes;
  for (uint32_t i = 0; i < n_insns; i++) {
    npu_insn in;
    rd sub = {r->p, code_end, r->pos, r->file}; /* instructions may not run past code_bytes */
    COV_RETURN_IF_ERROR(get_insn(&sub, i, &in));
    r->pos = sub.pos;
    COV_RETURN_IF_ERROR(npu_prog_add(p, &in));
  }
  if (r->pos != code_end)
    return cov_error(COV_INVALID_INPUT, &loc, "field code_bytes: %llu, but the %u instructions take %zu bytes",
                     (unsigned long long)code_bytes, n_insns, r->pos - (code_end - code_bytes));
  return NULL;
}

/* The n_segs DRAM segments: address, size and bytes padded to 8. */
static cov_status decode_segments(rd *r, npu_prog *p, uint32_t n_segs) {
  cov_loc loc = {r->file, 0, 0, NULL};
  for (uint32_t i = 0; i < n_segs; i++) {
    char what[48];
    snprintf(what, sizeof what, "segment %u", i);
    COV_RETURN_IF_ERROR(rd_need(r, 16, what));
    uint64_t addr = get_u(r, 8), bytes = get_u(r, 8);
    uint64_t padded = bytes + (8 - bytes % 8) % 8;
    if (bytes > r->n - r->pos || padded > r->n - r->pos)
      return cov_error(COV_PARSE_ERROR, &loc,
                       "truncated program: segment %u: field bytes says %llu at offset %zu, only "
                       "%zu left",
                       i, (unsigned long long)bytes, r->pos, r->n - r->pos);
    COV_RETURN_IF_ERROR(npu_prog_add_segment(p, addr, r->p + r->pos, bytes));
    r->pos += (size_t)padded;
  }
  return NULL;
}

cov_status npu_decode(const uint8_t *data, size_t size, const char *file, npu_prog **out) {
  *out = NULL;
  rd r = {data, size, 0, file};
  cov_loc loc = {file, 0, 0, NULL};
  COV_RETURN_IF_ERROR(rd_need(&r, NPU_HEADER_BYTES, "the header"));
  if (memcmp(data, NPU_MAGIC, 4) != 0)
    return cov_error(COV_PARSE_ERROR, &loc,
                     "not an NPU program: field magic: expected \"CNPU\" at offset 0");
  r.pos = 4;
  uint32_t version = (uint32_t)get_u(&r, 2);
  if (version != NPU_VERSION && version != NPU_VERSION_CORES)
    return cov_error(COV_UNSUPPORTED, &loc, "field version: program format %u, expected %u or %u",
                     version, NPU_VERSION, NPU_VERSION_CORES);
  uint32_t n_cores = (uint32_t)get_u(&r, 2);
  if (version == NPU_VERSION_CORES && (n_cores < 2 || n_cores > NPU_MAX_CORES))
    return cov_error(COV_INVALID_INPUT, &loc,
                     "field n_cores (offset 6): %u cores, a program of format %u has 2 to %d",
                     n_cores, NPU_VERSION_CORES, NPU_MAX_CORES);
  if (version == NPU_VERSION) n_cores = 1;
  npu_prog *p = NULL;
  COV_RETURN_IF_ERROR(npu_prog_create(&p));
  p->acg_digest = get_u(&r, 8);
  memcpy(p->acg_name, data + r.pos, NPU_NAME_MAX);
  r.pos += NPU_NAME_MAX;
  cov_status st = NULL;
  if (p->acg_name[NPU_NAME_MAX - 1] != '\0') {
    st = cov_error(COV_INVALID_INPUT, &loc, "field acg_name: not NUL-terminated");
    goto fail;
  }
  uint32_t n_insns = (uint32_t)get_u(&r, 4);
  uint32_t n_tensors = (uint32_t)get_u(&r, 4);
  uint32_t n_segs = (uint32_t)get_u(&r, 4);
  r.pos += 4;
  p->dram_bytes = get_u(&r, 8);
  uint64_t code_bytes = get_u(&r, 8);
  if (n_insns > NPU_MAX_INSNS || n_tensors > NPU_MAX_TENSORS || n_segs > NPU_MAX_SEGMENTS) {
    st = cov_error(COV_OUT_OF_RANGE, &loc,
                   "header counts past the limits: %u instructions (max %u), %u tensors (max %u), "
                   "%u segments (max %u)",
                   n_insns, NPU_MAX_INSNS, n_tensors, NPU_MAX_TENSORS, n_segs, NPU_MAX_SEGMENTS);
    goto fail;
  }
  if (p->dram_bytes > NPU_MAX_DRAM_BYTES) {
    st = cov_error(COV_OUT_OF_RANGE, &loc, "field dram_bytes: %llu, limit %llu",
                   (unsigned long long)p->dram_bytes, (unsigned long long)NPU_MAX_DRAM_BYTES);
    goto fail;
  }
  if ((st = decode_tensors(&r, p, n_tensors))) goto fail;
  if ((st = decode_cores(&r, p, n_cores, n_insns))) goto fail;
  if (code_bytes > r.n - r.pos) {
    st = cov_error(COV_PARSE_ERROR, &loc,
                   "truncated program: field code_bytes says %llu bytes of instructions at "
                   "offset %zu, only %zu left",
                   (unsigned long long)code_bytes, r.pos, r.n - r.pos);
    goto fail;
  }
  if ((st = decode_code(&r, p, n_insns, code_bytes))) goto fail;
  if ((st = decode_segments(&r, p, n_segs))) goto fail;
  if (r.pos != r.n) {
    st = cov_error(COV_INVALID_INPUT, &loc, "%zu unexpected bytes after the last segment",
                   r.n - r.pos);
    goto fail;
  }
  *out = p;
  return NULL;
fail:
  npu_prog_free(p);
  return st;
}
