/* acg/acg_ir.h: the in-memory ACG, shared by the mapper and the backends.
 *
 * Built once by acg_load.c, validated by acg_validate.c, then read-only. All
 * memory belongs to acg->arena. Nodes are numbered in one space: storage
 * first (0 .. n_storage-1), then compute (n_storage .. n_nodes-1), so edges
 * and path searches need no tagged references. */
#ifndef COV_ACG_IR_H
#define COV_ACG_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "common/op_table.h"
#include "covenant/acg.h"
#include "covenant/arena.h"
#include "covenant/types.h"

#define ACG_VERSION 1
#define ACG_MAX_NODES 4096
#define ACG_MAX_EDGES (4 * ACG_MAX_NODES)
/* The smallest speeds and the largest capacity an ACG may give: below and
 * above them numbers are typos (1e-16 bytes/cycle), and cycle counts derived
 * from them would overflow. acg/README.md lists them. */
#define ACG_MIN_BANDWIDTH 0.01    /* bytes per cycle, edges and storage */
#define ACG_MIN_THROUGHPUT 0.01   /* operations per cycle, capabilities */
#define ACG_MIN_CLOCK_MHZ 1.0
#define ACG_MAX_CAPACITY (UINT64_C(1) << 50) /* bytes per instance */
#define ACG_MAX_CAPS 256
#define ACG_MAX_TILE_RANK 3

typedef enum acg_storage_kind {
  ACG_DRAM,       /* off-chip main memory: where model tensors live */
  ACG_CACHE,      /* hardware-managed (GPU L2): not addressed by schedules */
  ACG_SCRATCHPAD, /* software-managed on-chip buffer (NPU buffers, GPU LDS) */
  ACG_REGFILE,    /* registers or accumulators next to a compute unit */
  ACG_STORAGE_KIND_COUNT
} acg_storage_kind;

typedef enum acg_compute_kind {
  ACG_SYSTOLIC, /* 2-D array of MAC PEs fed from scratchpads */
  ACG_MATRIX,   /* matrix instruction unit (MFMA, tensor core) */
  ACG_SIMD,     /* vector unit with `lanes` lanes */
  ACG_SCALAR,
  ACG_COMPUTE_KIND_COUNT
} acg_compute_kind;

typedef struct acg_src {
  unsigned line, col;
  const char *path; /* JSON path of the node in its file */
} acg_src;

typedef struct acg_storage {
  const char *name;
  acg_storage_kind kind;
  uint64_t capacity_bytes; /* per instance */
  uint32_t instances;      /* identical copies (LDS per CU, ...) */
  uint32_t banks;
  uint32_t width_bits;     /* bits per bank access */
  uint32_t ports;
  bool double_buffer;      /* schedules may split it into two halves */
  double bandwidth_bytes_per_cycle; /* total over all its paths; 0 = unlimited */
  bool has_energy;
  double read_pj_per_byte, write_pj_per_byte;
  double area_mm2;         /* 0 when not given */
  const char *about;
  acg_src src;
} acg_storage;

typedef struct acg_capability {
  cov_op op;
  cov_dtype in[3];  /* operand dtypes; n_in of them */
  int n_in;
  cov_dtype out;    /* result/accumulator dtype */
  uint32_t tile[ACG_MAX_TILE_RANK]; /* shape covered by one operation issue */
  int tile_rank;
  double throughput; /* operations per cycle per instance (MACs for mac) */
  uint32_t latency;  /* cycles from issue to result */
  /* GPU matrix instructions: waves (warps) that issue one instruction
   * together (1; 4 for a warpgroup MMA), and whether its multiplicands are
   * read from the scratchpad (shared memory) instead of registers */
  uint32_t waves;
  bool operands_in_scratchpad;
  double energy_pj_per_op; /* 0 when not given */
  /* Fused forms a SIMD unit offers for this unary op (ACG_FUSE_*; "fused"
   * in the JSON): the op applied to its operand plus a bias (a per-row
   * broadcast value), and the add-reduction of the results written per row,
   * in the same pass at the op's throughput (an activation unit's
   * func(x + bias) with an accumulate, as AWS Trainium's ScalarEngine
   * activation / activation_reduce) */
  uint32_t fused;
  acg_src src;
} acg_capability;

#define ACG_FUSE_BIAS 0x1    /* "bias": op(x + b) */
#define ACG_FUSE_ROW_SUM 0x2 /* "row_sum": also sum[r] = sum over the row of the results */
#define ACG_FUSE_ROW_MAX 0x4 /* "row_max": also max[r] = max over the row of the results */

typedef struct acg_compute {
  const char *name;
  acg_compute_kind kind;
  uint32_t dims[2]; /* systolic/matrix array shape; {lanes,1} for simd */
  int n_dims;
  uint32_t instances;
  /* weight registers per PE of a systolic array (1 or 2): with 2, the
   * weights of the next gemm load while the current one streams */
  uint32_t weight_buffers;
  acg_capability *caps;
  int n_caps;
  double area_mm2;
  const char *about;
  acg_src src;
} acg_compute;

typedef struct acg_edge {
  int from, to; /* node ids */
  double bandwidth_bytes_per_cycle;
  uint32_t latency_cycles;
  bool bidirectional;
  /* copies on this path may bypass registers and run asynchronously to
   * compute (GPU global -> shared memory cp.async) */
  bool async;
  double pj_per_byte; /* 0 when not given */
  const char *about;
  acg_src src;
} acg_edge;

/* The backend section. The loader checks its fields' types and ranges;
 * which backends exist and which fields each takes (mcpu and calibration
 * for a GPU, code_object_version for amdgpu) the backend registry checks,
 * located by the positions below (backends/registry/backend_acg.c), so
 * the ACG module names no backend. */
typedef struct acg_backend {
  const char *name;  /* the backend serving the target: a registry row's name */
  const char *mcpu;  /* GPU: "gfx90a", "sm_90a"; NULL otherwise */
  uint32_t wave_size;
  uint32_t max_workgroup_threads;
  uint32_t code_object_version; /* 0 = not given (the backend's default) */
  uint32_t max_thread_registers; /* GPU: 4-byte registers one thread may use; 0 = not given */
  acg_src src;      /* the backend object */
  acg_src name_src; /* its name's value */
  acg_src mcpu_src, code_object_src; /* those fields' keys, when given */
  acg_src doc_src;  /* the document (where a missing calibration is reported) */
} acg_backend;

/* The GPU cost model's fitted constants (acg/README.md, "calibration"):
 * what the mapper's GPU search (mapper/map_gpu.c) cannot derive from the
 * rest of the ACG, fitted per GPU to measured kernel times. Required for
 * GPU backends, refused for the others (the registry checks which). */
typedef struct acg_calibration {
  bool given;
  double overlap;          /* share of the non-binding resources' demand added to the binding one's */
  double reg_eff;          /* matrix rate of per-wave instructions fed through registers */
  double lat_mul;          /* share of the DRAM -> scratchpad latency a K step waits for */
  double waves_per_unit;   /* waves a unit needs to issue back to back */
  double copy_ops_gather;  /* vector ops per gathered A element (NCHW convolution) */
  double copy_ops_elem;    /* vector ops per guarded B element */
  double copy_ops_nhwc_row; /* vector ops per 16-byte row a channels-last convolution gathers */
  double ws_step_cycles;   /* warp-specialised kernel: a consumer's K step beyond its demand */
  double ws_scale;         /* warp-specialised kernel: predicted / measured of the other kernels */
  double wg_step_cycles;   /* a channels-last convolution's K step alone on its core, beyond its MMAs */
  const char *about;       /* where the fit comes from */
  acg_src src;             /* the calibration key, when given */
} acg_calibration;

struct cov_acg {
  cov_arena *arena;
  const char *file;
  const char *name;
  const char *about;
  double clock_mhz;
  acg_backend backend;
  acg_calibration calibration;
  acg_storage *storage;
  int n_storage;
  acg_compute *compute;
  int n_compute;
  acg_edge *edges;
  int n_edges;
};

static inline int acg_n_nodes(const cov_acg *g) { return g->n_storage + g->n_compute; }
static inline bool acg_is_storage(const cov_acg *g, int node) { return node < g->n_storage; }
const char *acg_node_name(const cov_acg *g, int node);
/* Where the node was defined in its file. */
const acg_src *acg_node_src(const cov_acg *g, int node);
/* Node id for a name, or -1. */
int acg_find_node(const cov_acg *g, const char *name);

const char *acg_storage_kind_name(acg_storage_kind k);
const char *acg_compute_kind_name(acg_compute_kind k);

/* Hops from the nearest DRAM to each node along directed edges (-1 when
 * unreachable); out must hold acg_n_nodes(g) ints. */
void acg_levels_from_dram(const cov_acg *g, int *out);

/* Bytes per cycle out of DRAM: for each DRAM node, the sum of the paths that
 * leave it (bidirectional ones included), capped by the node's own
 * bandwidth_bytes_per_cycle when given; summed over DRAM nodes. */
double acg_dram_bandwidth(const cov_acg *g);

/* Whether a weight-stationary gemm on systolic node `array` may load its
 * weights from storage node b_buf while the previous gemm streams: the
 * array has two weight registers per PE (`weight_buffers` 2) and b's edge
 * into the array is neither the streamed operand's (a_buf) nor that of the
 * accumulator/bias preload (pre_buf, -1 if none), so the two phases use
 * different ports. The simulator and the mapper's cost model both ask this. */
bool acg_weights_overlap(const cov_acg *g, int array, int a_buf, int b_buf, int pre_buf);

/* How many accesses one bank of storage node `s` serves when `n` elements
 * `stride` bytes apart, starting at byte `addr`, are touched in the same
 * cycle: the bank-conflict factor (distinct `width_bits` words per bank,
 * divided by its ports; elements in one word are one access). The
 * simulator's timing and the mapper's cost model both count it here. */
uint32_t acg_bank_degree(const acg_storage *s, uint64_t addr, int64_t stride, uint32_t n);
/* The same count for elements in two digits: element i at byte
 * addr + (i % radix) * stride + (i / radix) * stride2 (a gemm operand read
 * through m digits, npu-sim ISA.md). radix >= n is acg_bank_degree. */
uint32_t acg_bank_degree2(const acg_storage *s, uint64_t addr, int64_t stride, uint32_t radix,
                          int64_t stride2, uint32_t n);

/* Peak MACs/cycle for multiplicands a x b accumulating in acc, as `acg show`
 * prints it (each unit's best matching mac capability x instances, summed);
 * 0 when no unit offers that combination. */
double acg_peak_macs_per_cycle(const cov_acg *g, cov_dtype a, cov_dtype b, cov_dtype acc);

/* How a compute unit runs a contraction (acg_mac.c): the one check the
 * mapper's binding and the NPU code generator share. ARRAY: a systolic
 * array (rows x cols); TILES: a matrix, SIMD or scalar unit issuing
 * tm x tn x tk tiles (matrix: the capability's tile [M, N, K]; SIMD: vector
 * MACs [1, lanes, 1], or a dot-product tile [M, N, K] where given; scalar
 * [1, 1, 1]), at most rows (k: 64 rounded up to whole issues) x cols (n:
 * one issue's width) per instruction, m any. */
typedef enum acg_mac_kind { ACG_MAC_NONE, ACG_MAC_ARRAY, ACG_MAC_TILES } acg_mac_kind;
typedef struct acg_mac_form {
  acg_mac_kind kind;
  uint32_t tm, tn, tk; /* one issue */
  uint32_t rows, cols; /* k and n per instruction at most */
} acg_mac_form;
/* Whether capability `cap` of compute unit `unit` (compute index) runs a
 * contraction, and in which form; else false and the reason in why. */
bool acg_mac_form_of(const cov_acg *g, int unit, int cap, acg_mac_form *f, char *why, size_t nwhy);
/* Issues of an m x k x n contraction in the TILES form (whole tiles). */
uint64_t acg_mac_tile_issues(const acg_mac_form *f, uint64_t m, uint64_t k, uint64_t n);
/* One TILES instruction's occupancy of its unit: its issues at the
 * capability's throughput (tm x tn x tk MACs each), at least each edge's
 * bytes at its bandwidth (A read once per column issue, B once per row
 * issue, C read when c_in and written once; operands on one edge summed).
 * The simulator charges it and the mapper's cost model predicts with it. */
typedef struct acg_mac_operands {
  uint64_t m, k, n;
  int buf[4];         /* storage nodes of A, B, C written, C read */
  uint64_t es[3];     /* element bytes of A, B, C */
  bool c_in;          /* C read (accumulating) */
} acg_mac_operands;
uint64_t acg_mac_tile_cycles(const cov_acg *g, int unit, int cap, const acg_mac_form *f,
                             const acg_mac_operands *o);

/* Semantic checks on a fully built ACG (names, edges, reachability); appends
 * located errors. Called by the loader. */
cov_status acg_validate(const cov_acg *g);

/* Parses "64KiB", "4GiB", "512B", "1024" into bytes. Returns 0 and sets *out,
 * or -1 for bad syntax, -2 for overflow. */
int acg_parse_size(const char *s, uint64_t *out);
/* Formats bytes as the shortest exact binary unit ("64KiB", "1536B"). */
void acg_format_size(uint64_t bytes, char *buf, size_t size);

#endif
