/* tests/gpu/test_gpu_cdl_jit.c: the generic codelet lowering (gpu_cdl.h)
 * run for real. Every codelet of the shipped library and of the files
 * given (tests/gpu/codelets/extra.cdl: codelets no GPU code knows) is
 * bound to small shapes, lowered to LLVM IR with the JIT harness's host
 * target operations, verified, optimised at O2 and compiled for this CPU
 * through LLVM's JIT (gpu_jit_harness.h) and run, every work item of the
 * grid in a scrambled order; its outputs are compared
 * with the reference interpreter's on the same random inputs.
 * Each call is also built for the GPU targets named with -t (PTX or HSACO
 * produced, non-empty). Exit 1 on any mismatch or failure; codelets that
 * cannot be bound to the generated shapes are listed and counted, and
 * fewer than MIN_RUN run codelets fail the test.
 * -d DIM: the dims' size (default 3; larger ones span many workgroups);
 * -f DTYPE: what float type parameters bind (default f32; f16, bf16, f64).
 * -x PREFIX: only the codelets whose name starts with PREFIX, each bound
 * with every admitted type of f32 / i32 / i8 / u8 / i64 in turn, on
 * extreme inputs (NaN, infinities, values past every integer type's
 * range, -0, halves; the integer types' limits).
 * -p P1,P2,...: of the shipped codelets only those whose name starts with
 * one of the prefixes. -w N: every codelet of the files given after it
 * must run with N threads per work item (32: as teams of lanes,
 * gpu_cdl.h; 1: single threads); a team's lanes run as concurrent
 * threads meeting at a barrier for each exchange of values.
 * Usage: test_gpu_cdl_jit [-t TARGET]... [-d DIM] [-f DTYPE] [-n MIN_RUN] [-x PREFIX] [-p PREFIXES] [-w N]
 * [FILE.cdl]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_cdl.h"
#include "codelets/cdl_ir.h"
#include "gpu_jit_harness.h"

enum { MIN_RUN = 90 };

/* ---- inputs ------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t base_dim = 3; /* -d: the smallest dim tried */
static cov_dtype float_pick = COV_F32; /* -f: what float type parameters bind */
static double next(void) {
  return gpu_jit_unit(&rng) * 2.0 - 1.0;
}

static const char *extreme_prefix; /* -x */
static const char *only_prefixes;  /* -p: comma-separated name prefixes of the library's codelets to run */
static int want_lanes;             /* -w N: the files' codelets must run with N threads per work item */

static int picked(const char *name) {
  if (!only_prefixes) return 1;
  for (const char *p = only_prefixes; *p;) {
    size_t n = strcspn(p, ",");
    if (n && !strncmp(name, p, n)) return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

/* Element i of an input on extreme values (-x): floats and integers past
 * every range, NaN, infinities, -0, halves (truncation), each dtype's
 * limits. Returns 0 where the dtype takes none of them (random then). */
static int extreme(cov_dtype d, int64_t i, unsigned char *p) {
  static const double fv[] = {NAN, INFINITY, -INFINITY, 3e9, -3e9, 2.5, -2.5, -0.0, 1e20, 300.7, -129.5, 7e4, 0.0, 1.0};
  static const int64_t iv[] = {INT64_MIN, INT64_MAX, 2147483648LL, -2147483649LL, 300, -129, -1, 0, 1, 255, 65536};
  double f = fv[i % (int64_t)(sizeof fv / sizeof fv[0])];
  int64_t v = iv[i % (int64_t)(sizeof iv / sizeof iv[0])];
  switch (d) {
  case COV_F32: { float x = (float)f; memcpy(p, &x, 4); return 1; }
  case COV_F64: memcpy(p, &f, 8); return 1;
  case COV_F16: { uint16_t h = cov_f32_to_f16((float)f); memcpy(p, &h, 2); return 1; }
  case COV_BF16: { uint16_t h = cov_f32_to_bf16((float)f); memcpy(p, &h, 2); return 1; }
  case COV_I64: memcpy(p, &v, 8); return 1;
  case COV_I32: { int32_t x = (int32_t)(uint32_t)v; memcpy(p, &x, 4); return 1; }
  case COV_I8: case COV_U8: *p = (unsigned char)v; return 1;
  default: return 0;
  }
}

static void fill(cov_tensor *t) {
  int64_t n = cov_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = next() * 2.0;
    if (extreme_prefix && extreme(t->dtype, i, (unsigned char *)t->data + (size_t)i * cov_dtype_size(t->dtype)))
      continue;
    unsigned char *p = (unsigned char *)t->data + (size_t)i * cov_dtype_size(t->dtype);
    switch (t->dtype) {
    case COV_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case COV_F16: { uint16_t h = cov_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case COV_BF16: { uint16_t h = cov_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case COV_F64: memcpy(p, &v, 8); break;
    case COV_I8: case COV_U8: *p = (unsigned char)(int)(v * 3 + 4); break;
    case COV_BOOL: *p = v > 0; break;
    case COV_I32: { int32_t x = (int32_t)(v * 5); memcpy(p, &x, 4); break; }
    case COV_I64: { int64_t x = (int64_t)(v * 5); memcpy(p, &x, 8); break; }
    default: memset(p, 0, cov_dtype_size(t->dtype));
    }
  }
}

/* A call of c on small shapes: every dim `dim`, type parameters the first
 * admitted of f32 / i32 / i8 / u8 (`tp` picks per attempt), required
 * attributes 1 (int) or 0.5 (float). */
static int make_call(const cdl_codelet *c, int64_t dim, int tp, gpu_cdl_call *k) {
  const cov_dtype pick[] = {float_pick, COV_I32, COV_I8, COV_U8, COV_I64, COV_BOOL};
  memset(k, 0, sizeof *k);
  k->c = c;
  cov_dtype tpd[CDL_MAX_TPARAMS];
  for (int t = 0; t < c->n_tparams; t++) {
    int j = 0, skip = t == 0 ? tp : 0;
    for (; j < 6; j++)
      if (cdl_tclass_admits(c->tparams[t].tclass, pick[j]) && skip-- <= 0) break;
    if (j == 6) return 0;
    tpd[t] = pick[j];
  }
  for (int a = 0; a < c->n_attrs && k->n_attrs < GPU_CDL_MAX_ATTRS; a++)
    if (!c->attrs[a].has_default)
      k->attrs[k->n_attrs++] = (cov_attr){.name = c->attrs[a].name, .is_float = c->attrs[a].is_float, .i = 1, .f = 0.5};
  if (c->n_inputs > GPU_CDL_MAX_IO) return 0;
  k->n_in = c->n_inputs;
  for (int i = 0; i < c->n_inputs; i++) {
    const cdl_operand *o = &c->operands[i];
    const cdl_type *ty = &o->type;
    k->in_dtype[i] = ty->kind == CDL_TY_DTYPE ? ty->dtype : ty->kind == CDL_TY_PARAM ? tpd[ty->tparam] : COV_F32;
    k->in_rank[i] = o->rank;
    /* operands of rank 6 and up (where_b8's views) at 3 per dim at most: 9^8 elements would not fit a test */
    int64_t dr = o->rank > 5 && dim > 3 ? 3 : dim;
    for (int d = 0; d < o->rank; d++) k->in_shape[i][d] = o->shape[d]->kind == CDL_IE_INT ? o->shape[d]->value : dr;
  }
  return 1;
}

/* ---- the JIT ----------------------------------------------------------------- */

/* gpu_lower_cdl behind the harness's pointer to what it lowers */
static cov_status lower_cdl(const void *what, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower_cdl(what, ops, mod, fn);
}

/* Lowers, verifies, optimises and compiles the call, then runs every work
 * item on args (inputs, outputs, workspaces): teams of lanes as the
 * concurrent threads of whole workgroups, exchanging values within their
 * warp (gpu_jit_run_groups); single threads one at a time (gpu_jit_run);
 * either in a scrambled order. */
static int run_jit(const gpu_cdl_call *k, const gpu_cdl_info *in, void **args) {
  const char *name = cov_codelet_name(k->c);
  if (in->lanes > 1)
    return gpu_jit_run_groups(name, lower_cdl, k, (in->threads + GPU_EW_THREADS - 1) / GPU_EW_THREADS, args,
                              in->n_args);
  return gpu_jit_run(name, lower_cdl, k, in->threads, args, in->n_args);
}

/* f32 arithmetic against the interpreter's double: a few f32 ulps, or
 * one rounding of the 16-bit type apart (computed in f32, then rounded) */
static int close_enough(double g, double r, cov_dtype d) {
  if (!cov_dtype_is_float(d)) return g == r;
  if (isnan(g) || isnan(r)) return isnan(g) && isnan(r);
  if (isinf(r) || isinf(g)) return g == r || fabs(r) > 1e30 || (d != COV_F32 && d != COV_F64 && fabs(g) > 6e4);
  double tol = d == COV_F16 ? 2e-3 : d == COV_BF16 ? 1.6e-2 : 2e-4;
  return fabs(g - r) <= tol * fmax(1.0, fabs(r));
}

/* One codelet: bound (the first type parameter's tp-th admitted pick,
 * or the first that binds for tp < 0), run both ways, compared. Returns 0
 * pass, 1 fail, 2 not bound to the generated shapes. */
static int check_codelet(const cdl_codelet *c, const gpu_jit_targets *tg, int tp0) {
  gpu_cdl_call k;
  gpu_cdl_info in;
  cov_status st = NULL;
  int bound = 0;
  for (int tp = tp0 < 0 ? 0 : tp0; tp < (tp0 < 0 ? 4 : tp0 + 1) && !bound; tp++)
    for (int64_t dim = base_dim; dim <= base_dim + 3 && !bound; dim++) {
      if (!make_call(c, dim, tp, &k)) break;
      st = gpu_cdl_analyse(&k, &in);
      bound = !st;
      cov_status_free(st);
    }
  if (!bound || in.n_args > GPU_JIT_MAX_ARGS) return 2;
  cov_tensor t[GPU_CDL_MAX_ARGS], ref[GPU_CDL_MAX_IO];
  memset(t, 0, sizeof t), memset(ref, 0, sizeof ref);
  void *args[GPU_CDL_MAX_ARGS];
  int fail = 0;
  for (int i = 0; i < in.n_args && !fail; i++) {
    if ((st = cov_tensor_alloc(&t[i], in.dtype[i], in.rank[i], in.shape[i]))) fail = 1;
    else if (i < k.n_in) fill(&t[i]);
    else memset(t[i].data, in.zero[i] ? 0 : 0x7f, (size_t)in.numel[i] * cov_dtype_size(in.dtype[i]));
    args[i] = t[i].data;
  }
  cov_status rs = fail ? NULL : cov_codelet_run(c, k.attrs, (size_t)k.n_attrs, t, (size_t)k.n_in, ref, (size_t)in.n_out);
  if (rs) { /* e.g. an integer division by zero on these inputs: not a lowering question */
    cov_status_free(rs);
    for (int i = 0; i < in.n_args; i++) cov_tensor_release(&t[i]);
    return 2;
  }
  fail = fail || run_jit(&k, &in, args);
  for (int o = 0; o < in.n_out && !fail; o++) {
    char who[32];
    snprintf(who, sizeof who, "output %d", o);
    fail = gpu_jit_compare(c->name, who, t[k.n_in + o].dtype, t[k.n_in + o].data, ref[o].data,
                           cov_tensor_numel(&t[k.n_in + o]), close_enough);
  }
  for (int j = 0; j < tg->n && !fail; j++) {
    gpu_ew e;
    memset(&e, 0, sizeof e);
    e.kind = GPU_EW_CODELET, e.cdl = k;
    fail = gpu_jit_build(c->name, &e, &tg->t[j], ".entry covenant_kern");
  }
  if (!fail && want_lanes && in.lanes != want_lanes) {
    fprintf(stderr, "FAIL %s: %d threads per work item (%d expected)\n", c->name, in.lanes, want_lanes);
    fail = 1;
  }
  printf("%s %-22s grid loops %d, %lld work items of %d thread%s, %lld statements per thread%s%s%s\n",
         fail ? "FAIL" : "ok  ", c->name, in.n_par, (long long)in.items, in.lanes, in.lanes > 1 ? "s" : "",
         (long long)in.serial, in.n_par ? "" : " (one item)", tp0 >= 0 ? ", x " : "",
         tp0 >= 0 ? cov_dtype_name(k.in_dtype[0]) : "");
  for (int i = 0; i < in.n_args; i++) cov_tensor_release(&t[i]);
  for (int o = 0; o < in.n_out; o++) cov_tensor_release(&ref[o]);
  return fail;
}

static int check_lib(const cov_codelet_lib *lib, const gpu_jit_targets *tg, int *n_run, int *n_skip, int shipped) {
  int fail = 0;
  for (size_t i = 0; i < cov_codelet_lib_count(lib); i++) {
    const cdl_codelet *c = cov_codelet_lib_at(lib, i);
    if (shipped && !picked(c->name)) continue;
    if (extreme_prefix) { /* every admitted type of the first parameter, on extreme inputs */
      if (strncmp(c->name, extreme_prefix, strlen(extreme_prefix)) != 0) continue;
      for (int tp = 0; tp < 5; tp++) {
        int r = check_codelet(c, tg, tp);
        fail |= r == 1;
        *n_run += r != 2;
      }
      continue;
    }
    int r = check_codelet(c, tg, -1);
    if (r == 2) {
      printf("skip %-22s (not bound to the generated shapes)\n", c->name);
      ++*n_skip;
      continue;
    }
    fail |= r;
    ++*n_run;
  }
  return fail;
}

int main(int argc, char **argv) {
  gpu_jit_init();
  gpu_jit_targets tg = {0};
  int fail = 0, n_run = 0, n_skip = 0, min_run = MIN_RUN;
  cov_codelet_lib *lib = NULL;
  cov_status st = NULL;
  for (int i = 1; i < argc && !st; i++) {
    if (!strcmp(argv[i], "-t") && i + 1 < argc) {
      st = gpu_jit_target_add(&tg, argv[++i]);
      continue;
    }
    if (!strcmp(argv[i], "-d") && i + 1 < argc) {
      base_dim = atoi(argv[++i]);
      continue;
    }
    if (!strcmp(argv[i], "-f") && i + 1 < argc) {
      float_pick = cov_dtype_from_name(argv[++i]);
      continue;
    }
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      min_run = atoi(argv[++i]);
      continue;
    }
    if (!strcmp(argv[i], "-p") && i + 1 < argc) {
      only_prefixes = argv[++i];
      continue;
    }
    if (!strcmp(argv[i], "-w") && i + 1 < argc) {
      want_lanes = atoi(argv[++i]);
      continue;
    }
    if (!strcmp(argv[i], "-x") && i + 1 < argc) {
      extreme_prefix = argv[++i];
      continue;
    }
    cov_codelet_lib *extra = NULL;
    if ((st = cov_codelet_lib_load_file(argv[i], &extra))) break;
    int before = n_run;
    fail |= check_lib(extra, &tg, &n_run, &n_skip, 0);
    if (n_run - before != (int)cov_codelet_lib_count(extra)) {
      fprintf(stderr, "FAIL %s: every codelet of a test file must run\n", argv[i]);
      fail = 1;
    }
    cov_codelet_lib_free(extra);
  }
  want_lanes = 0; /* the shipped codelets run as they plan */
  if (!st) st = cov_codelet_lib_load(NULL, &lib);
  if (!st) fail |= check_lib(lib, &tg, &n_run, &n_skip, 1);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    fail = 1;
  }
  cov_codelet_lib_free(lib);
  gpu_jit_targets_close(&tg);
  printf("%d codelets run, %d not bound\n", n_run, n_skip);
  if (n_run < min_run) {
    fprintf(stderr, "FAIL: %d codelets run (at least %d expected)\n", n_run, min_run);
    fail = 1;
  }
  return fail;
}
