/* mapper/map_epilogue.c: the codelets after the main one, lowered to vector
 * operations on the finished output tile (map_ir.h: map_vop).
 *
 * Single-nest elementwise codelets (relu, relu6, clip, gelu, sigmoid,
 * bias_add, ...) are translated statement by statement: the input value is
 * register 0, each scalar local gets a register, literals and float
 * attributes become scalars, and another input indexed by the codelet's loops
 * (a bias) becomes a per-channel vector operand whose access is the output's
 * access in the dimension it indexes. Softmax (a row reduction) and max
 * pooling with window == stride have fixed lowerings; softmax's divide by
 * the row sum becomes one reciprocal per row and a multiply where the ACG
 * makes that cheaper (softmax_reciprocal).
 */
#include <math.h>
#include <string.h>

#include "codelets/cdl_iexpr.h"
#include "common/loc.h"
#include "mapper/map_internal.h"

int map_epilogue_whole(const char *codelet) {
  static const char *const whole[] = {"relu", "relu6", "clip", "leaky_relu", "sigmoid",
                                      "tanh", "gelu", "gelu_tanh", "exp", "sqrt",
                                      "abs", "neg", "softmax", "quantize", "dequantize"};
  for (size_t i = 0; i < sizeof whole / sizeof *whole; i++)
    if (!strcmp(codelet, whole[i])) return 1;
  return 0;
}

static map_vop *new_vop(map_schedule *s, const char *from, const cov_loc *loc, cov_status *st) {
  if (s->n_vops >= MAP_MAX_VOPS) {
    *st = cov_error(COV_OUT_OF_RANGE, loc, "epilogue of %s: more than %d vector ops", from,
                    MAP_MAX_VOPS);
    return NULL;
  }
  map_vop *v = &s->vops[s->n_vops++];
  memset(v, 0, sizeof *v);
  v->from = from;
  v->node = v->cap = -1;
  return v;
}

/* The problem loop that alone indexes output dimension d with coefficient 1
 * and offset 0, or -1. */
static int loop_of_dim(const map_problem *p, int d) {
  const map_operand *o = &p->operands[p->output];
  int found = -1;
  if (o->acc.off[d] != 0) return -1;
  for (int l = 0; l < p->n_loops; l++) {
    if (o->acc.coef[d][l] == 0) continue;
    if (o->acc.coef[d][l] != 1 || found >= 0) return -1;
    found = l;
  }
  return found;
}

static cov_status lower_softmax(const map_call *mc, map_schedule *s) {
  map_problem *p = &s->prob;
  const map_operand *o = &p->operands[p->output];
  int l = loop_of_dim(p, o->rank - 1);
  cov_status st = NULL;
  const int64_t *view = mc->view_rank ? mc->view : mc->in[0].shape;
  int vr = mc->view_rank ? mc->view_rank : mc->in[0].rank;
  if (l < 0 || vr < 1 || view[vr - 1] != o->shape[o->rank - 1])
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer),
                     "softmax after %s: its rows must be the output's last dimension, indexed by "
                     "one loop",
                     p->codelet);
  static const struct { map_vop_kind k; cov_op op; } seq[5] = {
      {MAP_VOP_ROW_REDUCE, COV_OP_MAX}, {MAP_VOP_MAP, COV_OP_SUB}, {MAP_VOP_MAP, COV_OP_EXP},
      {MAP_VOP_ROW_REDUCE, COV_OP_ADD}, {MAP_VOP_MAP, COV_OP_DIV}};
  for (int i = 0; i < 5; i++) {
    map_vop *v = new_vop(s, "softmax", NULL, &st);
    if (!v) return st;
    v->kind = seq[i].k;
    v->op = seq[i].op;
    v->a.kind = MAP_VS_REG;
    v->loop = l;
    if (seq[i].op == COV_OP_SUB || seq[i].op == COV_OP_DIV) v->b.kind = MAP_VS_ROW;
  }
  if (s->n_rows < 1) s->n_rows = 1;
  return NULL;
}

static cov_status lower_pool(const map_call *mc, const cdl_binding *b, map_schedule *s) {
  map_problem *p = &s->prob;
  const cdl_codelet *c = mc->c;
  int64_t v[10] = {0};
  const char *names[] = {"kernel_h", "kernel_w", "stride_h", "stride_w", "pad_top",
                         "pad_left", "pad_bottom", "pad_right", "dilation_h", "dilation_w"};
  for (int i = 0; i < 10; i++)
    for (int a = 0; a < c->n_attrs; a++)
      if (!strcmp(c->attrs[a].name, names[i])) v[i] = b->attr_i[a];
  const map_operand *o = &p->operands[p->output];
  if (o->rank != 4 || v[0] != v[2] || v[1] != v[3] || v[4] || v[5] || v[6] || v[7] ||
      v[8] != 1 || v[9] != 1)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer),
                     "maxpool after %s: only window == stride, no padding, no dilation, on a "
                     "4-D output can be fused",
                     p->codelet);
  int lh = loop_of_dim(p, 2), lw = loop_of_dim(p, 3);
  if (lh < 0 || lw < 0 || o->shape[2] % v[0] || o->shape[3] % v[1])
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer),
                     "maxpool after %s: the output's H and W (%lld, %lld) must be multiples of "
                     "the window (%lld, %lld) and each indexed by one loop",
                     p->codelet, (long long)o->shape[2], (long long)o->shape[3], (long long)v[0],
                     (long long)v[1]);
  cov_status st = NULL;
  map_vop *vo = new_vop(s, "maxpool", NULL, &st);
  if (!vo) return st;
  vo->kind = MAP_VOP_POOL;
  vo->op = COV_OP_MAX;
  vo->a.kind = MAP_VS_REG;
  vo->pool_loop[0] = lh;
  vo->pool_loop[1] = lw;
  vo->window[0] = (int)v[0];
  vo->window[1] = (int)v[1];
  return NULL;
}

/* The dtypes statement st reads and writes, as the codelet declares its
 * operands: sources of one dtype (a SIMD op has one input dtype), `dst =
 * arg` across dtypes a cast (i32 -> f32, and f32 -> i8 in requantisation:
 * rounded half to even and saturated, as the codelet's store converts). */
static cov_status stmt_dtypes(const cdl_codelet *c, const cdl_binding *b, const cdl_stmt *st,
                              map_vop *v) {
  v->dout = b->dtype[st->dst.operand];
  v->din = COV_DTYPE_INVALID;
  for (int a = 0; a < st->n_args; a++) {
    if (st->args[a].kind != CDL_ARG_ACCESS) continue;
    cov_dtype t = b->dtype[st->args[a].access.operand];
    if (v->din != COV_DTYPE_INVALID && t != v->din)
      return cov_error(COV_UNSUPPORTED, &st->loc,
                       "epilogue codelet %s: %s reads %s and %s (a SIMD op has one input dtype)",
                       c->name, common_op_name(st->op), cov_dtype_name(v->din), cov_dtype_name(t));
    v->din = t;
  }
  if (v->din == COV_DTYPE_INVALID) v->din = v->dout; /* constants only */
  if (v->op == COV_OP_COPY && v->din != v->dout) v->op = COV_OP_CAST;
  return NULL;
}

/* A generic elementwise codelet being lowered: its loops (outermost
 * first), the register of each scalar local, the vector operand of each
 * constant input, the registers in use. */
typedef struct ew_state {
  const map_call *mc;
  const cdl_binding *b;
  map_schedule *s;
  cov_arena *arena;
  int loop_ids[CDL_MAX_LOOP_DEPTH], n_l;
  int reg_of[CDL_MAX_OPERANDS * 3];
  int vec_of[CDL_MAX_OPERANDS * 3];
  int n_regs;
} ew_state;

/* Input opi read by arg as a constant vector: each of its indices must be
 * one loop that indexes the input x in some dimension; it inherits the
 * output's access in that dimension. Adds it to the problem's operands
 * once. */
static cov_status vector_operand(ew_state *e, const cdl_arg *arg, int opi) {
  const cdl_codelet *c = e->mc->c;
  map_problem *p = &e->s->prob;
  const cdl_operand *co = &c->operands[opi];
  const map_operand *out = &p->operands[p->output];
  if (e->vec_of[opi] >= 0) return NULL;
  /* call 0 of a layer that is all epilogue sees the input itself */
  int vr = e->mc->view_rank ? e->mc->view_rank : e->mc->in[0].rank;
  if (p->n_operands >= MAP_MAX_OPERANDS || vr != out->rank)
    return cov_error(COV_UNSUPPORTED, &arg->loc, "epilogue codelet %s: input %s cannot be fused", c->name,
                     co->name);
  map_operand *vo = &p->operands[p->n_operands];
  memset(vo, 0, sizeof *vo);
  vo->name = cov_arena_printf(e->arena, "%s.%s", c->name, co->name);
  vo->role = MAP_ROLE_VECTOR;
  vo->dtype = vo->compute_dtype = e->b->dtype[opi];
  vo->rank = co->rank;
  vo->acc.rank = co->rank;
  for (int d = 0; d < co->rank; d++) {
    vo->shape[d] = e->b->shape[opi][d];
    const cdl_affine *af = &arg->access.aff[d];
    int xd = -1;
    if (af->n_terms == 1) {
      /* find the dim of x indexed by this loop (x is accessed as
       * x[l0, l1, ...] in these codelets) */
      for (int k = 0; k < e->n_l; k++)
        if (e->loop_ids[k] == af->loops[0]) xd = k;
    }
    if (xd < 0 || xd >= out->rank)
      return cov_error(COV_UNSUPPORTED, &arg->loc, "epilogue codelet %s: %s's index %d is not one loop of x",
                       c->name, co->name, d + 1);
    vo->acc.off[d] = out->acc.off[xd];
    for (int l = 0; l < p->n_loops; l++) vo->acc.coef[d][l] = out->acc.coef[xd][l];
  }
  vo->layer_input = -2; /* set by the caller */
  e->vec_of[opi] = p->n_operands++;
  return NULL;
}

/* One argument of a statement as a vector op's source: a scalar (literal,
 * float attribute, integer constant), register 0 (the input), a local's
 * register, or a constant vector. */
static cov_status lower_arg(ew_state *e, const cdl_arg *arg, map_vsrc *src) {
  const cdl_codelet *c = e->mc->c;
  const cdl_binding *b = e->b;
  if (arg->kind == CDL_ARG_FLOAT) {
    src->kind = MAP_VS_SCALAR;
    src->value = arg->f;
  } else if (arg->kind == CDL_ARG_FATTR) {
    src->kind = MAP_VS_SCALAR;
    src->value = b->attr_f[arg->attr];
  } else if (arg->kind == CDL_ARG_ACCESS) {
    int opi = arg->access.operand;
    const cdl_operand *co = &c->operands[opi];
    if (opi == 0) {
      src->kind = MAP_VS_REG;
      src->index = 0;
    } else if (co->role == CDL_LOCAL && co->rank == 0) {
      if (e->reg_of[opi] < 0)
        return cov_error(COV_UNSUPPORTED, &arg->loc, "epilogue codelet %s: %s read before written", c->name,
                         co->name);
      src->kind = MAP_VS_REG;
      src->index = e->reg_of[opi];
    } else if (co->role == CDL_INPUT) {
      COV_RETURN_IF_ERROR(vector_operand(e, arg, opi));
      src->kind = MAP_VS_VEC;
      src->index = e->vec_of[opi];
    } else {
      return cov_error(COV_UNSUPPORTED, &arg->loc, "epilogue codelet %s: cannot fuse a read of %s", c->name,
                       co->name);
    }
  } else if (!cdl_iexpr_has_loop(arg->ie)) {
    /* an integer constant such as relu6's 0 and 6 */
    cdl_env env = {c, b->dims, b->attr_i, b->lets, NULL};
    int64_t iv;
    COV_RETURN_IF_ERROR(cdl_eval(arg->ie, &env, &iv));
    src->kind = MAP_VS_SCALAR;
    src->value = (double)iv;
  } else {
    return cov_error(COV_UNSUPPORTED, &arg->loc, "epilogue codelet %s: index argument", c->name);
  }
  return NULL;
}

/* Statement st's destination (the last statement writes the output,
 * register 0; the others a local's register). */
static cov_status lower_dst(ew_state *e, const cdl_stmt *st, bool last, map_vop *v) {
  const cdl_codelet *c = e->mc->c;
  int d = st->dst.operand;
  const cdl_operand *dop = &c->operands[d];
  if (dop->role == CDL_OUTPUT) {
    if (!last)
      return cov_error(COV_UNSUPPORTED, &st->loc, "epilogue codelet %s: output written before the end",
                       c->name);
    v->dst = 0;
  } else if (dop->role == CDL_LOCAL && dop->rank == 0) {
    if (e->reg_of[d] < 0) {
      if (e->n_regs >= MAP_MAX_VREGS)
        return cov_error(COV_OUT_OF_RANGE, &st->loc, "epilogue codelet %s: more than %d registers", c->name,
                         MAP_MAX_VREGS);
      e->reg_of[d] = e->n_regs++;
    }
    v->dst = e->reg_of[d];
  } else {
    return cov_error(COV_UNSUPPORTED, &st->loc, "epilogue codelet %s: writes %s", c->name, dop->name);
  }
  return NULL;
}

/* Generic single-nest elementwise codelet. */
static cov_status lower_elementwise(const map_call *mc, const cdl_binding *b, map_schedule *s,
                                    cov_arena *arena) {
  const cdl_codelet *c = mc->c;
  const cdl_block *blk = &c->body;
  ew_state e = {.mc = mc, .b = b, .s = s, .arena = arena};
  /* descend through the loops: `for a in A, b in B {...}` is nested loops */
  while (blk->n == 1 && blk->stmts[0]->kind == CDL_ST_LOOP && e.n_l < CDL_MAX_LOOP_DEPTH) {
    e.loop_ids[e.n_l++] = blk->stmts[0]->loop.id;
    blk = &blk->stmts[0]->loop.body;
  }
  for (int i = 0; i < CDL_MAX_OPERANDS * 3; i++) e.reg_of[i] = -1;
  e.n_regs = s->n_vregs > 1 ? s->n_vregs : 1;
  for (int i = 0; i < CDL_MAX_OPERANDS * 3; i++) e.vec_of[i] = -1;
  for (size_t i = 0; i < blk->n; i++) {
    const cdl_stmt *st = blk->stmts[i];
    if (st->kind != CDL_ST_ASSIGN)
      return cov_error(COV_UNSUPPORTED, &st->loc, "epilogue codelet %s: nested loops", c->name);
    cov_status err = NULL;
    map_vop *v = new_vop(s, c->name, &st->loc, &err);
    if (!v) return err;
    v->kind = MAP_VOP_MAP;
    v->op = st->op;
    COV_RETURN_IF_ERROR(stmt_dtypes(c, b, st, v));
    if (st->n_args > 2)
      return cov_error(COV_UNSUPPORTED, &st->loc, "epilogue codelet %s: %d-argument op", c->name,
                       st->n_args);
    for (int a = 0; a < st->n_args; a++) COV_RETURN_IF_ERROR(lower_arg(&e, &st->args[a], a == 0 ? &v->a : &v->b));
    COV_RETURN_IF_ERROR(lower_dst(&e, st, i + 1 == blk->n, v));
  }
  if (e.n_regs > s->n_vregs) s->n_vregs = e.n_regs;
  return NULL;
}

cov_status map_lower_epilogue(const cov_layer *layer, int first, map_schedule *s, cov_arena *arena) {
  if (s->n_vregs < 1) s->n_vregs = 1;
  /* layer input numbering: call 0's inputs, then each later call's extra inputs */
  int next_input = layer->calls[0].n_inputs;
  for (int ci = first; ci < layer->n_calls; ci++) {
    const map_call *mc = &layer->calls[ci];
    cdl_binding b;
    COV_RETURN_IF_ERROR(cdl_bind(mc->c, mc->attrs, (size_t)mc->n_attrs, mc->in,
                                 (size_t)mc->n_inputs, arena, &b));
    int before = s->prob.n_operands;
    cov_status st;
    if (!strcmp(mc->c->name, "softmax")) st = lower_softmax(mc, s);
    else if (!strcmp(mc->c->name, "maxpool")) st = lower_pool(mc, &b, s);
    else st = lower_elementwise(mc, &b, s, arena);
    if (st) return cov_status_annotate(st, "layer %s: ", layer->name);
    /* vector operands take layer input numbers in their codelet's order */
    for (int o = before; o < s->prob.n_operands; o++) s->prob.operands[o].layer_input = -2;
    /* a layer that is all epilogue: call 0's own inputs 1.. (scales, zero
     * points) are layer inputs 1.. */
    for (int in = 1; in < mc->n_inputs; in++) {
      const char *nm = mc->c->operands[in].name;
      for (int o = before; o < s->prob.n_operands; o++) {
        const char *dot = strchr(s->prob.operands[o].name, '.');
        if (dot && !strcmp(dot + 1, nm)) s->prob.operands[o].layer_input = ci > 0 ? next_input : in;
      }
      if (ci > 0) next_input++;
    }
  }
  for (int o = 0; o < s->prob.n_operands; o++)
    if (s->prob.operands[o].layer_input == -2)
      return cov_error(COV_INTERNAL, COV_AT(NULL, layer->name), "layer %s: epilogue operand %s unnumbered", layer->name,
                       s->prob.operands[o].name);
  return NULL;
}

/* Register 0 holds the accumulator when the epilogue starts: where the
 * codelets read it as another dtype (an integer layer's i32 on a float
 * array, whose sums the mapper proved exact), a cast comes first. */
static cov_status cast_accumulator(map_schedule *s, cov_dtype acc) {
  cov_dtype want = COV_DTYPE_INVALID;
  for (int i = 0; i < s->n_vops && want == COV_DTYPE_INVALID; i++) {
    const map_vop *v = &s->vops[i];
    if ((v->a.kind == MAP_VS_REG && v->a.index == 0) || (v->b.kind == MAP_VS_REG && v->b.index == 0))
      want = v->din;
  }
  if (want == COV_DTYPE_INVALID || want == acc || cov_dtype_is_float(want)) return NULL;
  if (s->n_vops >= MAP_MAX_VOPS)
    return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, s->prob.layer), "layer %s: epilogue of more than %d vector ops",
                     s->prob.layer, MAP_MAX_VOPS);
  memmove(&s->vops[1], &s->vops[0], sizeof(map_vop) * (size_t)s->n_vops);
  s->n_vops++;
  map_vop *v = &s->vops[0];
  memset(v, 0, sizeof *v);
  v->kind = MAP_VOP_MAP;
  v->op = COV_OP_CAST;
  v->a.kind = MAP_VS_REG;
  v->from = s->vops[1].from;
  v->din = acc;
  v->dout = want;
  return NULL;
}

/* The SIMD capability of op on dtype dt: node and index, or -1. */
static int simd_cap(const cov_acg *acg, cov_op op, cov_dtype din, cov_dtype dout, int *cap) {
  for (int c = 0; c < acg->n_compute; c++) {
    const acg_compute *cn = &acg->compute[c];
    if (cn->kind != ACG_SIMD) continue;
    for (int k = 0; k < cn->n_caps; k++)
      if (cn->caps[k].op == op && cn->caps[k].in[0] == din && cn->caps[k].out == dout) {
        *cap = k;
        return acg->n_storage + c;
      }
  }
  return -1;
}

static bool reads_reg(const map_vop *v, int r) {
  return (v->a.kind == MAP_VS_REG && v->a.index == r) || (v->b.kind == MAP_VS_REG && v->b.index == r);
}

/* ReLU6 / Clip(0, hi) lower to max(x, 0) then min(t, hi) (or relu then
 * min): two passes of the SIMD unit over the output tile, which bound the
 * cycles of layers whose array work is short (a 16 -> 96 expansion at
 * 112x112 spent 150K cycles on them). Where the ACG's SIMD unit offers
 * relu_min in the same float dtype, the pair becomes that one op; the
 * result is bit-identical (relu_min is defined as the composition). */
static void fuse_relu_min(const cov_acg *acg, map_schedule *s, cov_dtype dt) {
  int cap, fused = 0;
  if (!cov_dtype_is_float(dt) || simd_cap(acg, COV_OP_RELU_MIN, dt, dt, &cap) < 0) return;
  for (int i = 0; i + 1 < s->n_vops; i++) {
    map_vop *lo = &s->vops[i], *hi = &s->vops[i + 1];
    if (lo->kind != MAP_VOP_MAP || hi->kind != MAP_VOP_MAP) continue;
    if (lo->din != lo->dout || hi->din != hi->dout || lo->dout != hi->din ||
        (lo->din && !cov_dtype_is_float(lo->din)))
      continue;
    bool relu = lo->op == COV_OP_RELU ||
                (lo->op == COV_OP_MAX && lo->b.kind == MAP_VS_SCALAR && lo->b.value == 0);
    if (!relu || lo->a.kind == MAP_VS_SCALAR || hi->op != COV_OP_MIN) continue;
    /* min(t, hi) or min(hi, t) with t lo's result and nothing else reading it */
    map_vsrc bound = hi->b.kind == MAP_VS_REG && hi->b.index == lo->dst ? hi->a : hi->b;
    bool t_first = hi->a.kind == MAP_VS_REG && hi->a.index == lo->dst;
    bool t_second = hi->b.kind == MAP_VS_REG && hi->b.index == lo->dst;
    if (t_first == t_second || bound.kind != MAP_VS_SCALAR) continue;
    bool read_later = false;
    if (lo->dst != hi->dst)
      for (int j = i + 2; j < s->n_vops && !read_later; j++) {
        if (reads_reg(&s->vops[j], lo->dst)) read_later = true;
        if (s->vops[j].dst == lo->dst) break;
      }
    if (read_later) continue;
    lo->op = COV_OP_RELU_MIN;
    lo->b = bound;
    lo->dst = hi->dst;
    memmove(hi, hi + 1, sizeof(map_vop) * (size_t)(s->n_vops - i - 2));
    s->n_vops--;
    fused++;
  }
  for (int i = 0; i < s->n_vops; i++) /* row registers are numbered apart: leave those alone */
    if (s->vops[i].kind == MAP_VOP_ROW_REDUCE || s->vops[i].a.kind == MAP_VS_ROW ||
        s->vops[i].b.kind == MAP_VS_ROW)
      fused = 0;
  if (!fused) return;
  /* registers no op uses any more take no slot (map_epi_plan sizes by
   * n_vregs): renumber the rest densely, register 0 staying 0 */
  int map[MAP_MAX_VREGS], n = 1;
  for (int r = 0; r < MAP_MAX_VREGS; r++) map[r] = r == 0 ? 0 : -1;
  for (int i = 0; i < s->n_vops; i++) {
    map_vop *v = &s->vops[i];
    int *rs[3] = {&v->dst, v->a.kind == MAP_VS_REG ? &v->a.index : NULL,
                  v->b.kind == MAP_VS_REG ? &v->b.index : NULL};
    for (int k = 0; k < 3; k++)
      if (rs[k] && *rs[k] >= 0 && *rs[k] < MAP_MAX_VREGS && map[*rs[k]] < 0) map[*rs[k]] = n++;
  }
  if (n >= s->n_vregs) return;
  for (int i = 0; i < s->n_vops; i++) {
    map_vop *v = &s->vops[i];
    v->dst = map[v->dst];
    if (v->a.kind == MAP_VS_REG) v->a.index = map[v->a.index];
    if (v->b.kind == MAP_VS_REG) v->b.index = map[v->b.index];
  }
  s->n_vregs = n;
}

/* Whether element-wise op v (on register 0, into register 0) commutes with
 * a max pool over pool's window: f(x) = op(x, c) non-decreasing in x, with c
 * the same over each window (a scalar, or a vector operand that no pool loop
 * indexes: a per-channel bias). Rounding to the dtype is non-decreasing
 * too, so max over the window of f(x) is f(max of x), bit for bit. */
static bool commutes_with_max_pool(const map_problem *p, const map_vop *v, const map_vop *pool) {
  if (v->kind != MAP_VOP_MAP || v->dst != 0 || v->a.kind != MAP_VS_REG || v->a.index != 0) return false;
  if (!cov_dtype_is_float(v->din) || v->din != v->dout) return false;
  switch (v->op) {
  case COV_OP_ADD: case COV_OP_SUB: case COV_OP_MAX: case COV_OP_MIN: case COV_OP_RELU_MIN:
    break;
  case COV_OP_RELU: case COV_OP_COPY:
    return v->b.kind == MAP_VS_NONE;
  default:
    return false;
  }
  if (v->b.kind == MAP_VS_SCALAR) return true;
  if (v->b.kind != MAP_VS_VEC) return false;
  for (int w = 0; w < 2; w++)
    if (map_operand_depends(&p->operands[v->b.index], pool->pool_loop[w])) return false;
  return true;
}

/* A max pool after element-wise ops that commute with it runs first: they
 * then work on window[0] x window[1] times fewer elements (convnet_layer1's
 * bias + ReLU + 2x2 pool: 9,000 elements each for bias and ReLU, 2,250
 * after the pool), with the same result bits. */
static void pool_first(map_schedule *s) {
  int k = -1;
  for (int i = 0; i < s->n_vops; i++)
    if (s->vops[i].kind == MAP_VOP_POOL) {
      if (k >= 0) return; /* one pool only */
      k = i;
    }
  if (k <= 0) return;
  map_vop *pool = &s->vops[k];
  if (pool->op != COV_OP_MAX || pool->dst != 0 || pool->a.kind != MAP_VS_REG || pool->a.index != 0)
    return;
  for (int i = 0; i < k; i++)
    if (!commutes_with_max_pool(&s->prob, &s->vops[i], pool)) return;
  map_vop pv = *pool;
  memmove(&s->vops[1], &s->vops[0], sizeof(map_vop) * (size_t)k);
  s->vops[0] = pv;
}

void map_fold_relu_into_pool(map_schedule *s) {
  for (int i = 0; i + 1 < s->n_vops; i++) {
    map_vop *pool = &s->vops[i], *r = &s->vops[i + 1];
    if (pool->kind != MAP_VOP_POOL || pool->op != COV_OP_MAX || pool->b.kind != MAP_VS_NONE ||
        pool->dst != 0 || r->kind != MAP_VOP_MAP || r->dst != 0 || r->a.kind != MAP_VS_REG ||
        r->a.index != 0 || !cov_dtype_is_float(r->din) || r->din != r->dout)
      continue;
    bool relu = (r->op == COV_OP_RELU && r->b.kind == MAP_VS_NONE) ||
                (r->op == COV_OP_MAX && r->b.kind == MAP_VS_SCALAR);
    if (!relu) continue;
    pool->b.kind = MAP_VS_SCALAR;
    pool->b.value = r->op == COV_OP_RELU ? 0 : r->b.value;
    memmove(r, r + 1, sizeof(map_vop) * (size_t)(s->n_vops - i - 2));
    s->n_vops--;
    return;
  }
}

/* The SIMD capability of unary op on dt offering the fused forms `need`
 * (ACG_FUSE_*): node and index, or -1. */
static int simd_cap_fused(const cov_acg *acg, cov_op op, cov_dtype dt, uint32_t need, int *cap) {
  for (int c = 0; c < acg->n_compute; c++) {
    const acg_compute *cn = &acg->compute[c];
    if (cn->kind != ACG_SIMD) continue;
    for (int k = 0; k < cn->n_caps; k++)
      if (cn->caps[k].op == op && cn->caps[k].in[0] == dt && cn->caps[k].out == dt &&
          (cn->caps[k].fused & need) == need) {
        *cap = k;
        return acg->n_storage + c;
      }
  }
  return -1;
}

/* Whether any op from index `from` on reads row register r before one
 * rewrites it. */
static bool row_read_later(const map_schedule *s, int from, int r) {
  for (int j = from; j < s->n_vops; j++) {
    const map_vop *v = &s->vops[j];
    if ((v->a.kind == MAP_VS_ROW && v->a.index == r) || (v->b.kind == MAP_VS_ROW && v->b.index == r))
      return true;
    if ((v->kind == MAP_VOP_ROW_REDUCE || v->kind == MAP_VOP_ROW_MAP) && v->dst == r) return false;
    if (v->row_sum && v->sum_row == r) return false;
  }
  return false;
}

/* Softmax's x - max, exp and row sum are three passes of the SIMD unit.
 * Where the unit offers the op fused as op(x + bias) with the row's sum of
 * the results (acg_capability.fused "bias", "row_sum": an activation unit
 * with its accumulator, as AWS Trainium's ScalarEngine), they are one pass
 * at the op's throughput after a negation once per row:
 *   row R = reduce_max(x); row R = -row R; x' = op(x + row R), row S = sum(x').
 * x + (-m) is x - m in IEEE arithmetic and the sum adds the same stored
 * results in the same order: the bits of the unfused ops. */
static void fuse_bias_row_sum(const cov_acg *acg, map_schedule *s, cov_dtype dt) {
  int ncap;
  if (!cov_dtype_is_float(dt) || simd_cap(acg, COV_OP_NEG, dt, dt, &ncap) < 0) return;
  for (int i = 0; i + 2 < s->n_vops; i++) {
    map_vop *mx = &s->vops[i], *sub = &s->vops[i + 1], *f = &s->vops[i + 2];
    if (mx->kind != MAP_VOP_ROW_REDUCE || sub->kind != MAP_VOP_MAP || sub->op != COV_OP_SUB ||
        sub->a.kind != MAP_VS_REG || sub->b.kind != MAP_VS_ROW || sub->b.index != mx->dst ||
        f->kind != MAP_VOP_MAP || f->b.kind != MAP_VS_NONE || f->a.kind != MAP_VS_REG ||
        f->a.index != sub->dst || common_op_arity(f->op) != 1 || f->bias || f->row_sum)
      continue;
    bool floats = true;
    for (int k = 0; k < 3; k++)
      floats &= (!s->vops[i + k].din || s->vops[i + k].din == dt) &&
                (!s->vops[i + k].dout || s->vops[i + k].dout == dt);
    int cap;
    if (!floats || simd_cap_fused(acg, f->op, dt, ACG_FUSE_BIAS, &cap) < 0) continue;
    /* x - max is not kept: nothing after the op may read it, nor the row
     * max itself (it is negated in place) */
    bool dead = sub->dst == f->dst;
    if (!dead) {
      dead = true;
      for (int j = i + 3; j < s->n_vops && dead; j++) {
        if (reads_reg(&s->vops[j], sub->dst)) dead = false;
        if (s->vops[j].kind == MAP_VOP_MAP && s->vops[j].dst == sub->dst) break;
      }
    }
    if (!dead || row_read_later(s, i + 2, mx->dst)) continue;
    /* the row sum of the op's results, when the next op is it and the unit
     * offers it; it goes to a row register of its own (the bias row is read
     * while it is written) */
    map_vop *sum = i + 3 < s->n_vops ? &s->vops[i + 3] : NULL;
    bool fuse_sum = sum && sum->kind == MAP_VOP_ROW_REDUCE && sum->op == COV_OP_ADD &&
                    sum->a.kind == MAP_VS_REG && sum->a.index == f->dst && sum->loop == mx->loop &&
                    (!sum->din || sum->din == dt) && s->n_rows < 2 &&
                    simd_cap_fused(acg, f->op, dt, ACG_FUSE_BIAS | ACG_FUSE_ROW_SUM, &cap) >= 0;
    map_vop neg = *mx;
    neg.kind = MAP_VOP_ROW_MAP;
    neg.op = COV_OP_NEG;
    neg.a.kind = MAP_VS_ROW;
    neg.a.index = mx->dst;
    neg.b.kind = MAP_VS_NONE;
    neg.node = neg.cap = -1;
    map_vop fused = *f;
    fused.a = sub->a;
    fused.b = sub->b;
    fused.bias = true;
    fused.loop = mx->loop;
    *sub = neg;
    *f = fused;
    if (!fuse_sum) continue;
    int old = sum->dst, nr = s->n_rows;
    f->row_sum = true;
    f->sum_row = nr;
    s->n_rows = nr + 1;
    /* readers of the sum's row register read the new one, up to its next
     * write */
    for (int j = i + 4; j < s->n_vops; j++) {
      map_vop *v = &s->vops[j];
      if (v->a.kind == MAP_VS_ROW && v->a.index == old) v->a.index = nr;
      if (v->b.kind == MAP_VS_ROW && v->b.index == old) v->b.index = nr;
      if ((v->kind == MAP_VOP_ROW_REDUCE || v->kind == MAP_VOP_ROW_MAP) && v->dst == old) {
        if (v->kind == MAP_VOP_ROW_MAP && v->a.kind == MAP_VS_ROW && v->a.index == nr) {
          v->dst = nr; /* an in-place row op (the reciprocal) stays on the sum */
          continue;
        }
        break;
      }
    }
    memmove(sum, sum + 1, sizeof(map_vop) * (size_t)(s->n_vops - i - 4));
    s->n_vops--;
  }
}

/* Throughput (elements per cycle) of the SIMD capability running op on dt,
 * 0 if none. */
static double simd_rate(const cov_acg *acg, cov_op op, cov_dtype dt) {
  int cap, node = simd_cap(acg, op, dt, dt, &cap);
  if (node < 0) return 0;
  double t = acg->compute[node - acg->n_storage].caps[cap].throughput;
  return t > 0 ? t : 1;
}

/* Softmax's normalisation x / s (s the row's sum, broadcast along it) as
 * one reciprocal per row, r = pow(s, -1), then a multiply x * r, where the
 * ACG's SIMD unit makes that cheaper: 1/mul + 1/(pow x row length) cycles
 * per element against 1/div (npu-16x16: 1/16 + 1/512 against 1/4). x * (1/s)
 * differs from x / s by at most an ulp or two of f32; the rows still sum to
 * 1 within the tolerance the epilogue's f32 arithmetic has anyway. */
static cov_status softmax_reciprocal(const cov_acg *acg, map_schedule *s, cov_dtype dt) {
  if (!cov_dtype_is_float(dt)) return NULL;
  double rdiv = simd_rate(acg, COV_OP_DIV, dt), rmul = simd_rate(acg, COV_OP_MUL, dt);
  double rpow = simd_rate(acg, COV_OP_POW, dt);
  for (int i = 0; i < s->n_vops; i++) {
    map_vop *v = &s->vops[i];
    if (v->kind != MAP_VOP_MAP || v->op != COV_OP_DIV || v->a.kind != MAP_VS_REG ||
        v->b.kind != MAP_VS_ROW || (v->din && v->din != dt) || (v->dout && v->dout != dt))
      continue;
    double len = (double)s->prob.extent[v->loop];
    if (rmul <= 0 || rpow <= 0 || rdiv <= 0 || 1 / rmul + 1 / (rpow * len) >= 1 / rdiv) continue;
    if (s->n_vops >= MAP_MAX_VOPS) return NULL; /* no room: the divide stays */
    memmove(v + 1, v, sizeof(map_vop) * (size_t)(s->n_vops - i));
    s->n_vops++;
    map_vop *r = v, *m = v + 1;
    memset(r, 0, sizeof *r);
    r->kind = MAP_VOP_ROW_MAP;
    r->op = COV_OP_POW;
    r->dst = m->b.index;
    r->a = m->b;
    r->b.kind = MAP_VS_SCALAR;
    r->b.value = -1;
    r->loop = m->loop;
    r->from = m->from;
    r->node = r->cap = -1;
    m->op = COV_OP_MUL;
    i++;
  }
  return NULL;
}

cov_status map_bind_epilogue(const cov_acg *acg, map_schedule *s) {
  cov_dtype dt = s->acc_dtype ? s->acc_dtype : s->prob.operands[s->prob.output].dtype;
  COV_RETURN_IF_ERROR(cast_accumulator(s, dt));
  fuse_relu_min(acg, s, dt);
  fuse_bias_row_sum(acg, s, dt);
  COV_RETURN_IF_ERROR(softmax_reciprocal(acg, s, dt));
  for (int i = 0; i < s->n_vops; i++) {
    map_vop *v = &s->vops[i];
    /* f32 epilogues run in the accumulator's dtype (an f32 layer on an f16
     * array accumulates in f32); integer ones in the codelet's */
    if (!v->din || (cov_dtype_is_float(dt) && cov_dtype_is_float(v->din) && v->din == v->dout))
      v->din = v->dout = dt;
    v->cap = -1;
    if (v->bias || v->row_sum)
      v->node = simd_cap_fused(acg, v->op, v->din,
                               (v->bias ? ACG_FUSE_BIAS : 0u) | (v->row_sum ? ACG_FUSE_ROW_SUM : 0u),
                               &v->cap);
    else
      v->node = simd_cap(acg, v->op, v->din, v->dout, &v->cap);
    if (v->node < 0) {
      char ty[40];
      if (v->din == v->dout) snprintf(ty, sizeof ty, "%s", cov_dtype_name(v->din));
      else snprintf(ty, sizeof ty, "%s->%s", cov_dtype_name(v->din), cov_dtype_name(v->dout));
      return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, s->prob.layer),
                       "layer %s: the epilogue op %s(%s) from %s needs a SIMD capability; %s "
                       "offers none",
                       s->prob.layer, common_op_name(v->op), ty, v->from, acg->name);
    }
  }
  pool_first(s);
  map_fold_relu_into_pool(s);
  return NULL;
}

int map_vop_cols_dim(int rank, const int64_t *shape) {
  for (int d = rank - 1; d >= 0; d--)
    if (shape[d] > 1) return d;
  return rank > 0 ? rank - 1 : 0;
}

const int64_t *map_epi_box(const map_schedule *s) {
  int o = s->prob.output;
  if (s->n_levels < 2 || !s->place[o][1].present) return NULL;
  return map_epi_per_subtile(s) ? s->place[o][2].shape : s->place[o][1].shape;
}

double map_vop_src_bytes(const map_schedule *s, const map_vop *v, const int64_t *box, double ei) {
  const map_problem *p = &s->prob;
  const map_operand *out = &p->operands[p->output];
  int cd = box ? map_vop_cols_dim(out->rank, box) : 0;
  double cols = box ? (double)box[cd] : 0, bytes = 0;
  for (int q = 0; q < 2; q++) {
    const map_vsrc *src = q ? &v->b : &v->a;
    if (src->kind != MAP_VS_REG && src->kind != MAP_VS_VEC && src->kind != MAP_VS_ROW) continue;
    /* a row op reads each row value once: counted per row by the caller */
    bool bcast = v->kind != MAP_VOP_ROW_MAP && src->kind != MAP_VS_REG;
    if (bcast && box && src->kind == MAP_VS_ROW) bcast = out->acc.coef[cd][v->loop] != 0;
    if (bcast && box && src->kind == MAP_VS_VEC)
      for (int l = 0; l < p->n_loops; l++)
        if (out->acc.coef[cd][l] != 0 && map_operand_depends(&p->operands[src->index], l)) bcast = false;
    bytes += !bcast ? ei : cols > 0 ? ei / cols : 0;
  }
  return bytes;
}

cov_dtype map_epi_out_dtype(const map_schedule *s) {
  cov_dtype t = s->acc_dtype && !cov_dtype_is_float(s->acc_dtype) ? s->acc_dtype : COV_F32;
  for (int i = 0; i < s->n_vops; i++)
    if (s->vops[i].dst == 0 && (s->vops[i].kind == MAP_VOP_MAP || s->vops[i].kind == MAP_VOP_POOL) &&
        s->vops[i].dout)
      t = s->vops[i].dout;
  return t;
}

bool map_epi_per_subtile(const map_schedule *s) {
  const map_problem *p = &s->prob;
  int o = p->output;
  if (s->n_vops == 0 || s->n_levels < 3 || !s->place[o][1].present || !s->place[o][2].present) return false;
  for (int lv = 3; lv < s->n_levels; lv++)
    if (s->place[o][lv].present) return false;
  for (int i = 0; i < s->n_xfers; i++)
    if (s->xfers[i].operand == o && s->xfers[i].level >= 2 && s->xfers[i].dir == MAP_LOAD) return false;
  for (int v = 0; v < s->n_vops; v++)
    if (s->vops[v].kind != MAP_VOP_MAP || s->vops[v].node < 0 || s->vops[v].node == s->node) return false;
  return s->epi_in_place && s->epi_node == s->place[o][1].node && map_epi_out_dtype(s) == s->place[o][1].dtype;
}

uint64_t map_epi_half(const map_schedule *s, uint64_t have) {
  if (s->n_vops == 0 || s->n_levels < 2) return 0;
  const map_problem *p = &s->prob;
  const map_place *pl = &s->place[p->output][1];
  uint64_t elems = 1;
  for (int d = 0; d < p->operands[p->output].rank; d++) elems *= (uint64_t)pl->shape[d];
  uint64_t need = elems * 4 * (uint64_t)(s->n_vregs + s->n_rows + 2);
  return 2 * (need + 64 * MAP_EPI_SLOTS) <= have ? (have / 2) / 64 * 64 : 0;
}

/* The epilogue works on the output points of the level-1 tile (one per
 * combination of its output loops): each register is one value per point,
 * a row register one value per point with its row loop fixed, the pooled
 * result one value per window. Register 0 needs no slot when it is the
 * output's tile itself. Registers written by no op (and reg 0 when in place)
 * take no room. */
void map_epi_plan(const map_schedule *s, bool in_place, const int64_t *tile,
                    map_epi_layout *out) {
  const map_problem *p = &s->prob;
  memset(out, 0, sizeof *out);
  out->npts = 1;
  for (int l = 0; l < p->n_loops; l++)
    if (!p->reduction[l]) out->npts *= tile[l];
  int64_t at = 0;
  for (int r = 0; r < MAP_MAX_VREGS; r++) {
    out->reg_off[r] = -1;
    if (r >= s->n_vregs || (r == 0 && in_place)) continue;
    out->reg_off[r] = at;
    at += out->npts;
  }
  out->row_off[0] = out->row_off[1] = -1;
  out->row_elems = 0;
  for (int v = 0; v < s->n_vops; v++)
    if ((s->vops[v].kind == MAP_VOP_ROW_REDUCE || s->vops[v].row_sum) && tile[s->vops[v].loop] > 0) {
      int64_t e = out->npts / tile[s->vops[v].loop];
      if (e > out->row_elems) out->row_elems = e;
    }
  for (int r = 0; r < s->n_rows && r < 2; r++) {
    out->row_off[r] = at;
    at += out->row_elems;
  }
  out->pool_off = -1;
  for (int v = 0; v < s->n_vops; v++)
    if (s->vops[v].kind == MAP_VOP_POOL && out->pool_off < 0) {
      out->pool_off = at;
      out->pool_elems = out->npts / ((int64_t)s->vops[v].window[0] * s->vops[v].window[1]);
      at += out->pool_elems;
    }
  out->elems = at;
}

uint64_t map_epi_bytes(const map_target *t, const map_schedule *s, const int64_t *tile) {
  if (t->epi_node < 0 || s->n_vops == 0) return 0;
  map_epi_layout lay;
  map_epi_plan(s, t->epi_in_place, tile, &lay);
  return (uint64_t)lay.elems * cov_dtype_size(t->acc_dtype);
}

/* The first loop inside the level-1 tile with more than one trip that the
 * GEMMs do not absorb (the code generator's unrolled loop over them), or -1. */
static int first_unrolled(const map_schedule *s, const map_gemm_plan *gp) {
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->level >= 1 && sl->trips > 1 && !map_gemm_absorbs(gp, i)) return i;
  }
  return -1;
}

static bool same_plan(const map_gemm_plan *a, const map_gemm_plan *b) {
  if (a->ml != b->ml || a->ml2 != b->ml2 || a->kl != b->kl || a->nl != b->nl || a->a_op != b->a_op ||
      a->n_kd != b->n_kd || a->m_dig != b->m_dig)
    return false;
  for (int d = 0; d < a->n_kd; d++)
    if (a->kd[d] != b->kd[d]) return false;
  return true;
}

void map_epi_chunk_plan(map_schedule *s) {
  s->epi_chunk = 0;
  s->epi_chunk_dim = -1;
  const map_problem *p = &s->prob;
  int o = p->output;
  /* one on-chip level of the output, double-buffered (the array fills one
   * half while the SIMD unit works on the other), the epilogue on another
   * unit than the array's */
  if (s->n_vops == 0 || s->n_levels != 2 || !s->place[o][1].present || !s->place[o][1].double_buffered ||
      s->vops[0].node < 0 || s->vops[0].node == s->node || !map_gemm_applies(s))
    return;
  for (int i = 0; i < s->n_xfers; i++)
    if (s->xfers[i].operand == o && s->xfers[i].dir == MAP_LOAD) return;
  const map_vop *pool = NULL;
  for (int v = 0; v < s->n_vops; v++) {
    if (s->vops[v].kind == MAP_VOP_ROW_REDUCE || s->vops[v].kind == MAP_VOP_ROW_MAP) return;
    if (s->vops[v].kind == MAP_VOP_POOL) {
      if (pool) return;
      pool = &s->vops[v];
    }
  }
  if (!pool) return;
  map_gemm_plan gp;
  map_gemm_plan_make(s, &gp);
  if (gp.output_stationary) return;
  int first = first_unrolled(s, &gp);
  if (first < 0) return;
  const map_sloop *sl = &s->sloops[first];
  int w = pool->pool_loop[0] == sl->loop ? 0 : pool->pool_loop[1] == sl->loop ? 1 : -1;
  const map_operand *out = &p->operands[o];
  int d = -1;
  for (int k = 0; k < out->rank && d < 0; k++)
    if (out->acc.coef[k][sl->loop] == 1) d = k;
  if (w < 0 || d < 0 || p->reduction[sl->loop]) return;
  /* whole windows and whole trips of the loop, pooled elements >= lanes */
  const map_place *pl = &s->place[o][1];
  int64_t unit = pool->window[w], ext = pl->shape[d];
  while (unit % sl->step) unit += pool->window[w];
  int64_t other = pl->elems / ext, win = (int64_t)pool->window[0] * pool->window[1];
  const acg_capability *vc = &s->acg->compute[s->vops[0].node - s->acg->n_storage].caps[s->vops[0].cap];
  double lanes = vc->throughput > 0 ? vc->throughput : 1;
  int64_t len = unit;
  while (len < ext && (ext % len || (double)(other * len / win) < lanes)) len += unit;
  if (len >= ext) return;
  s->epi_chunk = len;
  s->epi_chunk_dim = d;
  /* the output's layout changes with it (map_gemm_tile_strides): keep it
   * only where the GEMMs stay the same and the loop still comes first */
  map_gemm_plan gp2;
  map_gemm_plan_make(s, &gp2);
  if (!same_plan(&gp, &gp2) || first_unrolled(s, &gp2) != first) {
    s->epi_chunk = 0;
    s->epi_chunk_dim = -1;
  }
}

int64_t map_epi_chunks(const map_schedule *s) {
  if (s->epi_chunk <= 0 || s->epi_chunk_dim < 0 || s->n_levels < 2) return 1;
  return s->place[s->prob.output][1].shape[s->epi_chunk_dim] / s->epi_chunk;
}
