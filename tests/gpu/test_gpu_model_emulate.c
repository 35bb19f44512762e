/* tests/gpu/test_gpu_model_emulate.c: a whole model compiled for a GPU
 * target (the plan: buffers, weights in kernel layout and dtype, copies
 * for the layout work, every launch with its arguments), run on the CPU
 * step by step — matrix kernels through the loop-nest reference on their
 * f16 operands, generic kernels through their C meaning — against the
 * reference interpreter (cov_model_run_ref) on random inputs. Catches
 * wrong bindings, weight layouts (transposes, channels-last reorders,
 * alpha/beta), copy runs and gather tables, fusion decisions and buffer
 * flow. With -t, a model whose layout work needs an index table (a gather
 * of i32 indices as large as the copied value, instead of strided copies)
 * fails too. With -e TEXT the model must be refused with an error whose
 * message contains TEXT (a located refusal, e.g. "node 'c1'"); if it
 * compiles, it is still emulated against the reference and reported, and
 * fails. With -s NAME=DIMS (repeatable) the models are loaded with those
 * input shapes bound (cov_model_options.shapes: a symbolic batch compiled
 * at 3). A 16-bit model (exported in float16) compiles loaded with
 * compute_f32; its reference is the model as exported, on the same inputs
 * (values exact in f16), its 16-bit outputs widened for the comparison.
 * Integer (i64) inputs are random valid values: token ids within the
 * rows of the table a Gather reads them as (cov_model_input_range).
 * With -l N a model compiled to more than N launches fails (the launch
 * count a plan reaches: channels-last convolutions passing f16 NHWC
 * activations without conversions between them). Every launch's buffers
 * must have the dtypes its kernel reads and writes (a matrix kernel's
 * 16-bit operands, f16 outputs where it writes f16, a copy's source):
 * the emulation sees every buffer as f32 values and would not notice.
 * With -d f32 the target is opened for f32 operands (`covenant compile
 * --dtype f32`): matrix kernels on the FMA path, f32 weights, no rounding;
 * -d bf16 opens it for bf16 (models refuse it: with -e, the refusal).
 * With -a N a model compiled to fewer than N fused attention launches
 * fails (the attention chains of transformer exports found as one
 * kernel each, gpu_mattn.c).
 * With -p f16 every matrix kernel keeps f16 operands (`covenant compile
 * --precision f16`); by default (-p auto) the precision plan gives the
 * first groups f32 operands where the f16 plan's estimated error is over
 * its budget (gpu_mprec.c), and says so. With -g MIN:MAX the plan must
 * have given between MIN and MAX matrix groups f32 operands.
 * With -r INPUT.npy DIR the model (one input) is emulated on that input
 * instead and its outputs written to DIR/output_K.npy, at the shapes the
 * run gives them (a detector's data-dependent outputs), for a comparison
 * done elsewhere (tests/frontend/check_detect.py: detections as a set).
 * With -u TUNING.json the model compiles with that tuning file (`covenant
 * compile --tuning`: the recorded schedules of its matrix and depthwise
 * kernels).
 * Usage: test_gpu_model_emulate [-t] [-l N] [-a N] [-e TEXT] [-n CASES] [-d f32|bf16] [-p auto|f16] [-g MIN:MAX]
 * [-s NAME=DIMS]... [-u TUNING.json] [-r INPUT.npy DIR] TARGET TOL MODEL.onnx... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/registry/backend_registry.h"
#include "covenant/model.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int g_max_launches = -1, g_min_attn = -1;
/* -c: the model's first matrix kernel (a CNN's stem) is a channels-last
 * convolution (NHWC f16 in and out) */
static int g_stem_cl;

/* The buffers of every launch in the dtypes its kernel takes; prints and
 * counts the mismatches. */
static int dtype_mismatches(const gpu_model_plan *p, const char *path) {
  int bad = 0;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH) continue;
    if (s->kkind == GPU_KERNEL_EW ? s->ew.kind != GPU_EW_COPY && s->ew.kind != GPU_EW_LNORM : s->pre) continue;
    cov_dtype in, out;
    if (s->kkind == GPU_KERNEL_EW) {
      out = s->ew.out_dtype;
      /* integer and bool elements are moved whole: read in their own dtype */
      in = s->ew.kind == GPU_EW_LNORM ? COV_F32
           : gpu_ew_raw(&s->ew) ? out
           : s->ew.in_dtype == COV_F16 ? COV_F16
           : p->bufs[s->args[0]].dtype == COV_I64 ? COV_I64 : COV_F32;
    } else if (s->kkind == GPU_KERNEL_ATTN) { /* Q, K, V in the kernel's 16-bit dtype, O in it or f32 */
      in = s->attn.in_dtype, out = s->attn.out_f32 ? (s->attn.out_f16 ? COV_F16 : COV_F32) : in;
      int b = 0;
      for (int k = 0; k < 4; k++) b |= p->bufs[s->args[k]].dtype != (k < 3 ? in : out);
      if (b) fprintf(stderr, "%s: step %d (%s): attention buffers of other dtypes\n", path, i, s->kernel);
      bad += b;
      continue;
    } else {
      /* a prologue (gate, cast) reads the f32 activation and rounds what it loads */
      in = s->plan.prob.a_pro != GPU_APRO_NONE ? COV_F32 : s->plan.prob.in_dtype;
      out = s->plan.out_f16 || s->plan.dw ? COV_F16 : COV_F32;
    }
    if (p->bufs[s->args[0]].dtype != in || (s->args[2] >= 0 && p->bufs[s->args[2]].dtype != out)) {
      fprintf(stderr, "%s: step %d (%s) takes %s and writes %s, its buffers are %s and %s\n", path, i, s->kernel,
              cov_dtype_name(in), cov_dtype_name(out), cov_dtype_name(p->bufs[s->args[0]].dtype),
              s->args[2] >= 0 ? cov_dtype_name(p->bufs[s->args[2]].dtype) : "-");
      bad++;
    }
  }
  return bad;
}
static float next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* The reference of a 16-bit model: its inputs converted to their declared
 * dtypes, its outputs back to f32 (want[] f32). */
static cov_status run_narrow(const cov_model *ref, const cov_tensor *in, int ni, cov_tensor *want, int no) {
  cov_tensor rin[16] = {{0}}, rout[16] = {{0}};
  cov_status st = NULL;
  for (int i = 0; i < ni && !st; i++) {
    cov_dtype dt;
    int rank;
    int64_t shape[COV_MAX_RANK];
    st = cov_model_input_info(ref, (size_t)i, &dt, &rank, shape);
    if (!st) st = cov_tensor_alloc(&rin[i], dt, in[i].rank, in[i].shape);
    for (int64_t j = 0; !st && j < cov_tensor_numel(&in[i]); j++) {
      float v = ((const float *)in[i].data)[j];
      if (dt == COV_F32) ((float *)rin[i].data)[j] = v;
      else ((uint16_t *)rin[i].data)[j] = dt == COV_F16 ? cov_f32_to_f16(v) : cov_f32_to_bf16(v);
    }
  }
  if (!st) st = cov_model_run_ref(ref, rin, (size_t)ni, rout, (size_t)no);
  for (int o = 0; o < no && !st; o++) {
    st = cov_tensor_alloc(&want[o], COV_F32, rout[o].rank, rout[o].shape);
    for (int64_t j = 0; !st && j < cov_tensor_numel(&rout[o]); j++) {
      uint16_t h = rout[o].dtype == COV_F32 ? 0 : ((const uint16_t *)rout[o].data)[j];
      ((float *)want[o].data)[j] = rout[o].dtype == COV_F32 ? ((const float *)rout[o].data)[j]
                                   : rout[o].dtype == COV_F16 ? cov_f16_to_f32(h) : cov_bf16_to_f32(h);
    }
  }
  for (int i = 0; i < ni; i++) cov_tensor_release(&rin[i]);
  for (int o = 0; o < no; o++) cov_tensor_release(&rout[o]);
  return st;
}

/* Random valid values of integer input i: ids within the rows of the table
 * a Gather reads them as (cov_model_input_range), else {0, 1}. */
static void random_ints(const cov_model *m, size_t i, cov_tensor *t) {
  int64_t lo = 0, hi = 1;
  if (!cov_model_input_range(m, i, &lo, &hi) || hi < lo) lo = 0, hi = 1;
  for (int64_t j = 0; j < cov_tensor_numel(t); j++) {
    double u = (next() + 1.0) * 0.5; /* [0, 1] */
    int64_t v = lo + (int64_t)(u * (double)(hi - lo + 1));
    ((int64_t *)t->data)[j] = v > hi ? hi : v;
  }
}

/* Element j of an output (f32, or an integer or bool result) as a double. */
static double elem(const cov_tensor *t, int64_t j) {
  switch (t->dtype) {
    case COV_I64: return (double)((const int64_t *)t->data)[j];
    case COV_I32: return (double)((const int32_t *)t->data)[j];
    case COV_I8: return (double)((const int8_t *)t->data)[j];
    case COV_BOOL:
    case COV_U8: return (double)((const uint8_t *)t->data)[j];
    default: return (double)((const float *)t->data)[j];
  }
}

static cov_model_shape g_shapes[8];
static size_t g_n_shapes;

static cov_dtype g_dtype = COV_F16;
static int g_cases = 1; /* random inputs per model (-n) */
static int g_f16_operands;          /* -p f16 */
static int g_min_f32 = -1, g_max_f32 = -1; /* -g: matrix groups the precision plan promotes */
static const char *g_run_input, *g_run_dir;
static const char *g_tuning; /* -u */

/* -r: the plan emulated on the input in g_run_input, its outputs written
 * into g_run_dir. */
static int run_given(const gpu_model_plan *p, const char *path) {
  cov_tensor in = {0}, got[16] = {{0}};
  cov_status st = p->n_inputs != 1 ? cov_error(COV_INVALID_ARGUMENT, NULL, "-r takes a model of one input")
                                   : cov_npy_read(g_run_input, &in);
  if (!st) st = gpu_model_emulate(p, &in, 1, got, (size_t)p->n_outputs);
  for (int o = 0; o < p->n_outputs && !st; o++) {
    char out[4096];
    snprintf(out, sizeof out, "%s/output_%d.npy", g_run_dir, o);
    st = cov_npy_write(out, &got[o]);
  }
  for (int o = 0; o < p->n_outputs; o++) cov_tensor_release(&got[o]);
  cov_tensor_release(&in);
  if (st) {
    fprintf(stderr, "%s: ", path);
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  printf("wrote %d output(s) of %s into %s\n", p->n_outputs, path, g_run_dir);
  return 0;
}

/* One random input (continuing the generator): the plan emulated and the
 * reference run on it, rel[o] = max |got - want| / max |want| of output o;
 * nonzero where either could not run or the outputs do not match in kind. */
static int run_case(const gpu_model_plan *p, const cov_model *m, cov_model *ref, const char *path, double *rel) {
  int ni = p->n_inputs, no = p->n_outputs, fail = 0;
  cov_tensor in[16] = {{0}}, got[16] = {{0}}, want[16] = {{0}};
  for (int i = 0; i < ni; i++) {
    const gpu_mbuf *b = &p->bufs[p->input_buf[i]];
    cov_tensor_alloc(&in[i], b->dtype, b->rank, b->shape);
    if (b->dtype == COV_I64) {
      random_ints(m, (size_t)i, &in[i]);
      continue;
    }
    for (int64_t j = 0; j < b->numel; j++) ((float *)in[i].data)[j] = next();
    cov_dtype io = cov_model_io_dtype(m, 0, (size_t)i);
    if (ref && io != COV_F32) /* values exact in the model's dtype; its reference takes them as they are */
      for (int64_t j = 0; j < b->numel; j++) {
        float *v = &((float *)in[i].data)[j];
        *v = io == COV_F16 ? cov_f16_to_f32(cov_f32_to_f16(*v)) : cov_bf16_to_f32(cov_f32_to_bf16(*v));
      }
  }
  cov_status st = gpu_model_emulate(p, in, (size_t)ni, got, (size_t)no);
  if (!st && ref) st = run_narrow(ref, in, ni, want, no);
  else if (!st) st = cov_model_run_ref(m, in, (size_t)ni, want, (size_t)no);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    fail = 1;
  }
  for (int o = 0; o < no && !fail; o++) {
    int64_t n = cov_tensor_numel(&want[o]);
    if (cov_tensor_numel(&got[o]) != n || got[o].dtype != want[o].dtype) {
      fprintf(stderr, "%s: output %d has %lld %s elements, ref %lld %s\n", path, o, (long long)cov_tensor_numel(&got[o]),
              cov_dtype_name(got[o].dtype), (long long)n, cov_dtype_name(want[o].dtype));
      fail = 1;
      break;
    }
    if (got[o].dtype != want[o].dtype) {
      fprintf(stderr, "%s: output %d is %s, ref %s\n", path, o, cov_dtype_name(got[o].dtype),
              cov_dtype_name(want[o].dtype));
      fail = 1;
      break;
    }
    double scale = 0, err = 0;
    for (int64_t j = 0; j < n; j++) scale = fmax(scale, fabs(elem(&want[o], j)));
    for (int64_t j = 0; j < n; j++) {
      double d = fabs(elem(&got[o], j) - elem(&want[o], j));
      if (!(d <= err)) err = d;
    }
    rel[o] = err / (scale > 0 ? scale : 1);
  }
  for (int i = 0; i < ni; i++) cov_tensor_release(&in[i]);
  for (int o = 0; o < no; o++) cov_tensor_release(&got[o]), cov_tensor_release(&want[o]);
  return fail;
}

static int check(const char *target, double tol, const char *path, int no_tables, const char *expect) {
  gpu_target t = {0};
  cov_model *m = NULL;
  gpu_model_plan p;
  cov_status st = gpu_target_open(backend_gpu_vendors(), target, g_dtype, &t);
  if (!st && g_tuning) st = gpu_tuning_attach(&t, &(cov_gpu_options){.tuning = g_tuning});
  t.f16_operands = g_f16_operands;
  cov_model_options mo = {.shapes = g_shapes, .n_shapes = g_n_shapes};
  cov_model *ref = NULL; /* the model as exported, when m is it widened (gpu_widened) */
  if (!st) st = cov_model_load_file(path, &mo, &ref);
  if (!st) st = gpu_widened(ref, path, &m);
  if (!st && !m) m = ref, ref = NULL; /* no 16-bit input or output: compiled as it is */
  if (!st) st = gpu_model_compile_with(m, path, &t, 0, &p);
  if (st) {
    int refused = 0;
    for (cov_status e = st; e && expect && !refused; e = cov_status_next(e))
      refused = strstr(cov_status_message(e), expect) != NULL;
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    if (refused) printf("PASS   %s %s: refused, naming \"%s\"\n", target, path, expect);
    if (m) cov_model_free(m);
    cov_model_free(ref);
    if (t.acg) gpu_target_close(&t);
    return !refused;
  }
  if (g_run_input) {
    int r = run_given(&p, path);
    gpu_model_plan_free(&p);
    cov_model_free(m);
    cov_model_free(ref);
    gpu_target_close(&t);
    return r;
  }
  int launches = 0, tables = 0, attn = 0;
  for (int s = 0; s < p.n_steps; s++) {
    launches += p.steps[s].op == GPU_STEP_LAUNCH;
    attn += p.steps[s].op == GPU_STEP_LAUNCH && p.steps[s].kkind == GPU_KERNEL_ATTN;
    tables += p.steps[s].op == GPU_STEP_LAUNCH && p.steps[s].kkind == GPU_KERNEL_EW && p.steps[s].ew.kind == GPU_EW_TABLE;
  }
  int table_fail = no_tables && tables;
  int plan_fail = dtype_mismatches(&p, path) > 0;
  if (g_max_launches >= 0 && launches > g_max_launches) {
    fprintf(stderr, "FAIL   %s %s: %d launches (at most %d expected)\n", target, path, launches, g_max_launches);
    plan_fail = 1;
  }
  int first = 0;
  while (first < p.n_steps && (p.steps[first].op != GPU_STEP_LAUNCH || p.steps[first].kkind != GPU_KERNEL_MATRIX)) first++;
  if (g_stem_cl && (first == p.n_steps || p.steps[first].plan.prob.kind != GPU_OP_CONV2D || !p.steps[first].plan.nhwc ||
                    !p.steps[first].plan.prob.nhwc_io)) {
    fprintf(stderr, "FAIL   %s %s: the first matrix kernel (step %d) is not a channels-last convolution\n", target, path,
            first);
    plan_fail = 1;
  }
  if (g_min_attn >= 0 && attn < g_min_attn) {
    fprintf(stderr, "FAIL   %s %s: %d fused attention launches (at least %d expected)\n", target, path, attn, g_min_attn);
    plan_fail = 1;
  }
  if (table_fail) fprintf(stderr, "FAIL   %s %s: %d index-table gathers (strided copies expected)\n", target, path, tables);
  gpu_mprec_note(&p, stdout);
  if (g_min_f32 >= 0 && (p.prec.n_f32 < g_min_f32 || p.prec.n_f32 > g_max_f32)) {
    fprintf(stderr, "FAIL   %s %s: %d matrix groups on f32 operands (%d to %d expected)\n", target, path, p.prec.n_f32,
            g_min_f32, g_max_f32);
    plan_fail = 1;
  }
  double rel[16] = {0};
  int fail = 0, worst[16] = {0};
  for (int c = 0; c < g_cases && !fail; c++) {
    double r[16] = {0};
    fail = run_case(&p, m, ref, path, r);
    for (int o = 0; o < p.n_outputs && o < 16 && !fail; o++)
      if (!(r[o] <= rel[o])) rel[o] = r[o], worst[o] = c;
  }
  for (int o = 0; o < p.n_outputs && o < 16 && !fail; o++) {
    int ok = rel[o] <= tol;
    printf("%-6s %s %s output %d: %d launches (%d index tables, %d fused attention), %d buffers, max rel err %.3g "
           "(tolerance %g%s)\n",
           ok ? "PASS" : "FAIL", target, path, o, launches, tables, attn, p.n_bufs, rel[o], tol,
           g_cases > 1 ? "; the worst of the random inputs" : "");
    if (!ok && g_cases > 1) printf("       worst at random input %d of %d\n", worst[o], g_cases);
    fail |= !ok;
  }
  gpu_model_plan_free(&p);
  cov_model_free(m);
  cov_model_free(ref);
  gpu_target_close(&t);
  if (expect) printf("FAIL   %s %s: compiled; a refusal naming \"%s\" was expected\n", target, path, expect);
  return fail || table_fail || plan_fail || expect;
}

int main(int argc, char **argv) {
  int no_tables = 0;
  const char *expect = NULL;
  /* the options, in any order, before TARGET */
  while (argc > 1 && argv[1][0] == '-' && argv[1][1] && !argv[1][2]) {
    char o = argv[1][1];
    int has_arg = o != 't' && o != 'c';
    if (has_arg && argc < 3) break; /* the usage below */
    char *v = has_arg ? argv[2] : NULL;
    if (o == 't') no_tables = 1;
    else if (o == 'c') g_stem_cl = 1;
    else if (o == 'l') g_max_launches = atoi(v);
    else if (o == 'a') g_min_attn = atoi(v);
    else if (o == 'e') expect = v;
    else if (o == 'u') g_tuning = v;
    else if (o == 'n') g_cases = atoi(v) > 0 ? atoi(v) : 1;
    else if (o == 'p') g_f16_operands = !strcmp(v, "f16");
    else if (o == 'g') {
      if (sscanf(v, "%d:%d", &g_min_f32, &g_max_f32) != 2 || g_min_f32 < 0 || g_max_f32 < g_min_f32) {
        fprintf(stderr, "%s: -g '%s': expected MIN:MAX\n", argv[0], v);
        return 2;
      }
    } else if (o == 'd') g_dtype = !strcmp(v, "f32") ? COV_F32 : !strcmp(v, "bf16") ? COV_BF16 : COV_F16;
    else if (o == 's' && g_n_shapes < 8) {
      cov_status st = cov_model_shape_parse(v, "-s", &g_shapes[g_n_shapes++]);
      if (st) {
        cov_status_print(stderr, st, 0);
        cov_status_free(st);
        return 2;
      }
    } else if (o == 'r' && argc > 3) {
      g_run_input = v, g_run_dir = argv[3], argv++, argc--;
    } else {
      fprintf(stderr, "%s: unknown option '%s'\n", argv[0], argv[1]);
      return 2;
    }
    argv += 1 + has_arg, argc -= 1 + has_arg;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: %s [-t] [-l N] [-c] [-a N] [-e TEXT] [-n CASES] [-d f32|bf16] [-p auto|f16] [-g MIN:MAX] "
                    "[-s NAME=DIMS]... [-u TUNING.json] [-r INPUT.npy DIR] TARGET TOL MODEL.onnx...\n", argv[0]);
    return 2;
  }
  int fail = 0;
  for (int i = 3; i < argc; i++) fail |= check(argv[1], atof(argv[2]), argv[i], no_tables, expect);
  return fail;
}
