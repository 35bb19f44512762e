/* tests/frontend/test_model_api.c: the public model API (covenant/model.h).
 *
 * Loads the example ConvNet from a file and from memory, runs it and
 * compares with the numpy reference, runs it from two threads at once (a
 * loaded model is immutable), and checks the API's refusals: wrong input
 * dtype or shape, wrong counts, external data without a folder, garbage. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "covenant/model.h"
#include "covenant/tensor.h"
#include "tests/check.h"

static char g_model[4096], g_input[4096], g_output[4096];

static double max_rel_error(const cov_tensor *got, const cov_tensor *want) {
  int64_t n = cov_tensor_numel(want);
  double scale = 0, err = 0;
  for (int64_t i = 0; i < n; i++) {
    double w = ((const float *)want->data)[i], gv = ((const float *)got->data)[i];
    if (fabs(w) > scale) scale = fabs(w);
    if (fabs(gv - w) > err) err = fabs(gv - w);
  }
  return scale > 0 ? err / scale : err;
}

static void test_load_and_run(void) {
  cov_model *m = NULL;
  cov_status st = cov_model_load_file(g_model, NULL, &m);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!m) return;
  CHECK(cov_model_num_inputs(m) == 1);
  CHECK(cov_model_num_outputs(m) == 1);
  CHECK_STR(cov_model_input_name(m, 0), "input");
  CHECK_STR(cov_model_output_name(m, 0), "output");
  CHECK(cov_model_find_input(m, "input") == 0);
  CHECK(cov_model_find_input(m, "nope") == -1);
  CHECK(cov_model_num_groups(m) == 2);
  cov_dtype dt;
  int rank;
  int64_t shape[COV_MAX_RANK];
  CHECK(cov_model_input_info(m, 0, &dt, &rank, shape) == NULL);
  CHECK(dt == COV_F32 && rank == 4 && shape[0] == 1 && shape[1] == 3 && shape[3] == 32);
  cov_status bad = cov_model_input_info(m, 5, &dt, &rank, shape);
  CHECK(cov_status_code(bad) == COV_INVALID_ARGUMENT);
  cov_status_free(bad);

  cov_tensor in, want, out;
  CHECK(cov_npy_read(g_input, &in) == NULL);
  CHECK(cov_npy_read(g_output, &want) == NULL);
  st = cov_model_run_ref(m, &in, 1, &out, 1);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!st) {
    CHECK(out.dtype == COV_F32 && out.rank == 4 && out.shape[1] == 10 && out.shape[3] == 11);
    CHECK(max_rel_error(&out, &want) < 1e-5);
    cov_tensor_release(&out);
  }

  /* Wrong dtype, wrong shape, wrong counts: refused, naming the input. */
  cov_tensor wrong;
  int64_t s2[4] = {1, 3, 16, 16};
  CHECK(cov_tensor_alloc(&wrong, COV_F32, 4, s2) == NULL);
  st = cov_model_run_ref(m, &wrong, 1, &out, 1);
  CHECK(cov_status_code(st) == COV_INVALID_ARGUMENT);
  CHECK(st && strstr(cov_status_message(st), "expected f32[1, 3, 32, 32], got f32[1, 3, 16, 16]"));
  CHECK_STR(cov_status_loc(st).path, "input 'input'");
  cov_status_free(st);
  cov_tensor_release(&wrong);
  CHECK(cov_tensor_alloc(&wrong, COV_F16, 4, in.shape) == NULL);
  st = cov_model_run_ref(m, &wrong, 1, &out, 1);
  CHECK(st && strstr(cov_status_message(st), "got f16[1, 3, 32, 32]"));
  cov_status_free(st);
  cov_tensor_release(&wrong);
  st = cov_model_run_ref(m, &in, 0, &out, 1);
  CHECK(st && strstr(cov_status_message(st), "takes 1 inputs, 0 were given"));
  cov_status_free(st);

  /* Printers: deterministic, and naming the groups. */
  char *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  FILE *fa = open_memstream(&a, &na), *fb = open_memstream(&b, &nb);
  CHECK(cov_model_print_summary(m, fa) == NULL);
  CHECK(cov_model_print_summary(m, fb) == NULL);
  fclose(fa);
  fclose(fb);
  CHECK(na == nb && a && b && memcmp(a, b, na) == 0);
  CHECK(a && strstr(a, "#0 conv+bias+relu+maxpool"));
  CHECK(a && strstr(a, "codelets: conv2d, bias_add, relu"));
  free(a);
  free(b);
  cov_tensor_release(&in);
  cov_tensor_release(&want);
  cov_model_free(m);
}

typedef struct job {
  const cov_model *m;
  const cov_tensor *in;
  cov_tensor out;
  cov_status st;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  j->st = cov_model_run_ref(j->m, j->in, 1, &j->out, 1);
  return NULL;
}

/* A model is immutable once loaded: concurrent runs agree bit for bit. */
static void test_concurrent_runs(void) {
  cov_model *m = NULL;
  CHECK(cov_model_load_file(g_model, NULL, &m) == NULL);
  cov_tensor in;
  CHECK(cov_npy_read(g_input, &in) == NULL);
  if (!m) return;
  job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job){.m = m, .in = &in};
    CHECK(pthread_create(&th[i], NULL, run_job, &jobs[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) {
    CHECK(jobs[i].st == NULL);
    cov_status_free(jobs[i].st);
  }
  size_t bytes = (size_t)cov_tensor_numel(&jobs[0].out) * 4;
  for (int i = 1; i < 4; i++)
    CHECK(jobs[i].out.data && memcmp(jobs[i].out.data, jobs[0].out.data, bytes) == 0);
  for (int i = 0; i < 4; i++) cov_tensor_release(&jobs[i].out);
  cov_tensor_release(&in);
  cov_model_free(m);
}

static void test_load_buffer(void) {
  char *data = NULL;
  size_t size = 0;
  CHECK(common_read_file(g_model, 1 << 20, &data, &size) == NULL);
  cov_model *m = NULL;
  cov_status st = cov_model_load_buffer(data, size, "mem.onnx", NULL, NULL, &m);
  CHECK(st == NULL && m);
  cov_status_free(st);
  cov_model_free(m);
  /* Garbage: an error, never a crash, and *out stays NULL. */
  m = (cov_model *)1;
  st = cov_model_load_buffer("\x0a\xff\xff\xff\xff\x0f", 6, "junk.onnx", NULL, NULL, &m);
  CHECK(st != NULL && m == NULL);
  CHECK(cov_status_code(st) == COV_PARSE_ERROR);
  CHECK_STR(cov_status_loc(st).file, "junk.onnx");
  cov_status_free(st);
  /* Every prefix of a valid model is rejected or accepted cleanly. */
  for (size_t cut = 0; cut < size; cut += 97) {
    st = cov_model_load_buffer(data, cut, "cut.onnx", NULL, NULL, &m);
    cov_status_free(st);
    cov_model_free(m);
  }
  free(data);
  st = cov_model_load_file(NULL, NULL, &m);
  CHECK(cov_status_code(st) == COV_INVALID_ARGUMENT);
  cov_status_free(st);
}

static void test_supported_ops_sorted(void) {
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  cov_model_print_supported_ops(f);
  fclose(f);
  CHECK(text && strstr(text, "Conv\tcompute") && strstr(text, "Reshape\tlayout"));
  int lines = 0, sorted = 1;
  char prev[64] = "";
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char name[64];
    if (sscanf(line, "%63s", name) != 1) continue;
    if (strcmp(prev, name) >= 0) sorted = 0;
    snprintf(prev, sizeof prev, "%s", name);
    lines++;
  }
  CHECK(sorted);
  CHECK(lines >= 45);

  free(text);
}

static void test_tensor_pb(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s.pb", g_output);
  /* A TensorProto written by hand: name "t", dims [2], FLOAT, raw 2 floats. */
  FILE *f = fopen("api_tensor.pb", "wb");
  static const unsigned char pb[] = {0x08, 0x02, 0x10, 0x01, 0x42, 0x01, 't',  0x4a, 0x08,
                                     0,    0,    0x80, 0x3f, 0,    0,    0x00, 0x40};
  CHECK(f && fwrite(pb, 1, sizeof pb, f) == sizeof pb);
  if (f) fclose(f);
  cov_tensor t;
  char name[16];
  cov_status st = cov_onnx_tensor_read("api_tensor.pb", &t, name, sizeof name);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!st) {
    CHECK_STR(name, "t");
    CHECK(t.dtype == COV_F32 && t.rank == 1 && t.shape[0] == 2);
    CHECK(((float *)t.data)[0] == 1.0f && ((float *)t.data)[1] == 2.0f);
    cov_tensor_release(&t);
  }
  remove("api_tensor.pb");
  (void)path;
}

/* cov_model_shape_parse: NAME=DIMS with 'x' or ',' between dims; refused
 * with the text named: no '=', no name, empty or zero dims, trailing
 * separators, too many dims, a dim past int64. Binding convnet's static
 * input to its own shape is accepted, to another one refused at the input;
 * a static input has no symbolic dims. */
static void test_shapes(void) {
  cov_model_shape s;
  char t1[] = "input=3x3x224x224", t2[] = "ids=2,128", t3[] = "scalar=";
  CHECK(!cov_model_shape_parse(t1, "--shape", &s) && !strcmp(s.name, "input") && s.rank == 4 && s.dims[0] == 3 &&
        s.dims[3] == 224);
  CHECK(!cov_model_shape_parse(t2, "--shape", &s) && s.rank == 2 && s.dims[1] == 128);
  CHECK(!cov_model_shape_parse(t3, "--shape", &s) && s.rank == 0);
  const char *bad[] = {"input", "=3x3", "a=3xx3", "a=0x3", "a=3x", "a=x3", "a=-1", "a=3y4", "a=1x2x3x4x5x6x7x8x9",
                       "a=99999999999999999999", NULL};
  for (int i = 0; bad[i]; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", bad[i]);
    cov_status st = cov_model_shape_parse(buf, "--shape", &s);
    CHECK(st && cov_status_code(st) == COV_INVALID_ARGUMENT);
    if (!st) fprintf(stderr, "accepted '%s'\n", bad[i]);
    cov_status_free(st);
  }
  cov_model_shape same = {"input", 4, {1, 3, 32, 32}}, other = {"input", 4, {2, 3, 32, 32}};
  cov_model_options o = {.shapes = &same, .n_shapes = 1};
  cov_model *m = NULL;
  cov_status st = cov_model_load_file(g_model, &o, &m);
  CHECK(!st && m && cov_model_input_symbolic(m, 0) == 0 && cov_model_io_dtype(m, 0, 0) == COV_F32);
  cov_status_free(st);
  cov_model_free(m);
  o.shapes = &other;
  st = cov_model_load_file(g_model, &o, &m);
  CHECK(st && !m && strstr(cov_status_message(st), "dim 0 is 1 in the model, not symbolic; the shape given says 2"));
  cov_status_free(st);
}

/* cov_sequence: copies in, dtype and length checked, an optional holds at
 * most one; a tensor-only model runs the same through
 * cov_model_run_ref_values as through cov_model_run_ref. */
static void test_sequence_api(void) {
  cov_sequence *seq = NULL, *opt = NULL;
  CHECK(cov_sequence_create(COV_F32, false, &seq) == NULL && seq);
  CHECK(cov_sequence_create(COV_F32, true, &opt) == NULL && opt);
  int64_t shape[2] = {2, 3}, none[1] = {0};
  cov_tensor a, e, i;
  CHECK(cov_tensor_alloc(&a, COV_F32, 2, shape) == NULL);
  CHECK(cov_tensor_alloc(&e, COV_F32, 1, none) == NULL);
  CHECK(cov_tensor_alloc(&i, COV_I64, 2, shape) == NULL);
  ((float *)a.data)[5] = 7.0f;
  CHECK(cov_sequence_append(seq, &a) == NULL && cov_sequence_append(seq, &e) == NULL);
  ((float *)a.data)[5] = 1.0f; /* the sequence kept its own copy */
  CHECK(cov_sequence_length(seq) == 2 && ((const float *)cov_sequence_at(seq, 0)->data)[5] == 7.0f);
  CHECK(cov_sequence_at(seq, 1)->rank == 1 && cov_sequence_at(seq, 1)->shape[0] == 0);
  CHECK(cov_sequence_at(seq, 2) == NULL);
  cov_status st = cov_sequence_append(seq, &i);
  CHECK(st && strstr(cov_status_message(st), "a i64 tensor in a sequence of f32"));
  cov_status_free(st);
  CHECK(cov_sequence_append(opt, &a) == NULL);
  st = cov_sequence_append(opt, &a);
  CHECK(st && cov_status_code(st) == COV_OUT_OF_RANGE && cov_sequence_length(opt) == 1);
  cov_status_free(st);
  CHECK(cov_sequence_is_optional(opt) && !cov_sequence_is_optional(seq) && cov_sequence_dtype(seq) == COV_F32);
  /* optionals of sequences: none takes no element, a held one any number */
  cov_sequence *os_none = NULL, *os = NULL;
  CHECK(cov_sequence_create_optional_sequence(COV_F32, true, &os_none) == NULL);
  CHECK(cov_sequence_create_optional_sequence(COV_F32, false, &os) == NULL);
  CHECK(cov_sequence_kind(os) == COV_VALUE_OPTIONAL_SEQUENCE && cov_sequence_kind(seq) == COV_VALUE_SEQUENCE &&
        cov_sequence_kind(opt) == COV_VALUE_OPTIONAL);
  CHECK(cov_sequence_is_none(os_none) && !cov_sequence_is_none(os) && !cov_sequence_is_none(opt));
  st = cov_sequence_append(os_none, &a);
  CHECK(st && strstr(cov_status_message(st), "holds no sequence") && cov_sequence_length(os_none) == 0);
  cov_status_free(st);
  CHECK(cov_sequence_append(os, &a) == NULL && cov_sequence_append(os, &e) == NULL &&
        cov_sequence_length(os) == 2 && !cov_sequence_is_optional(os));
  cov_sequence_free(os_none);
  st = cov_sequence_create_optional_sequence(COV_DTYPE_INVALID, false, &os_none);
  CHECK(st && cov_status_code(st) == COV_INVALID_ARGUMENT && !os_none);
  cov_status_free(st);
  cov_sequence_free(os);
  cov_sequence_free(seq);
  cov_sequence_free(opt);
  cov_tensor_release(&a);
  cov_tensor_release(&e);
  cov_tensor_release(&i);

  cov_model *m = NULL;
  CHECK(cov_model_load_file(g_model, NULL, &m) == NULL);
  cov_tensor in, out1, out2;
  CHECK(cov_npy_read(g_input, &in) == NULL);
  CHECK(cov_model_io_kind(m, 0, 0) == COV_VALUE_TENSOR && cov_model_io_kind(m, 1, 0) == COV_VALUE_TENSOR);
  cov_sequence *seq_out[1] = {NULL};
  CHECK(cov_model_run_ref(m, &in, 1, &out1, 1) == NULL);
  CHECK(cov_model_run_ref_values(m, &in, NULL, 1, &out2, seq_out, 1) == NULL && !seq_out[0]);
  CHECK(memcmp(out1.data, out2.data, (size_t)cov_tensor_numel(&out1) * sizeof(float)) == 0);
  cov_tensor_release(&in);
  cov_tensor_release(&out1);
  cov_tensor_release(&out2);
  cov_model_free(m);
}

int main(int argc, char **argv) {
  const char *src = argc > 1 ? argv[1] : ".";
  snprintf(g_model, sizeof g_model, "%s/examples/convnet.onnx", src);
  snprintf(g_input, sizeof g_input, "%s/examples/convnet_input.npy", src);
  snprintf(g_output, sizeof g_output, "%s/examples/convnet_output.npy", src);
  test_load_and_run();
  test_concurrent_runs();
  test_load_buffer();
  test_supported_ops_sorted();
  test_tensor_pb();
  test_shapes();
  test_sequence_api();
  return check_summary();
}
