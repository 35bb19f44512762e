/* codelets/cdl_print.c: the canonical text of a codelet.
 *
 * Canonical means: one layout whatever the input's (two-space indents, one
 * declaration or statement per line), declarations grouped (attributes,
 * then lets and requires in their order, then locals), perfectly nested
 * loops merged into one `for`, minimal parentheses, shortest round-tripping
 * float literals, no comments. Every field of the IR shows in the text, so
 * parsing the output gives the same IR and printing that gives the same
 * bytes (tests/codelets/roundtrip.sh checks both for every shipped file). */
#include <stdlib.h>
#include <string.h>

#include "codelets/cdl_ir.h"
#include "common/loc.h"

/* ---- index expressions -------------------------------------------------- */

enum { PREC_OR = 1, PREC_AND, PREC_CMP, PREC_SUM, PREC_TERM, PREC_UNARY, PREC_PRIMARY };

static int prec(const cdl_iexpr *e) {
  switch (e->kind) {
    case CDL_IE_OR: return PREC_OR;
    case CDL_IE_AND: return PREC_AND;
    case CDL_IE_EQ:
    case CDL_IE_NE:
    case CDL_IE_LT:
    case CDL_IE_LE:
    case CDL_IE_GT:
    case CDL_IE_GE: return PREC_CMP;
    case CDL_IE_ADD:
    case CDL_IE_SUB: return PREC_SUM;
    case CDL_IE_MUL:
    case CDL_IE_DIV:
    case CDL_IE_MOD: return PREC_TERM;
    case CDL_IE_NEG:
    case CDL_IE_NOT: return PREC_UNARY;
    case CDL_IE_INT: return e->value < 0 ? PREC_UNARY : PREC_PRIMARY;
    default: return PREC_PRIMARY;
  }
}

static const char *binop_text(cdl_iexpr_kind k) {
  switch (k) {
    case CDL_IE_OR: return " || ";
    case CDL_IE_AND: return " && ";
    case CDL_IE_EQ: return " == ";
    case CDL_IE_NE: return " != ";
    case CDL_IE_LT: return " < ";
    case CDL_IE_LE: return " <= ";
    case CDL_IE_GT: return " > ";
    case CDL_IE_GE: return " >= ";
    case CDL_IE_ADD: return " + ";
    case CDL_IE_SUB: return " - ";
    case CDL_IE_MUL: return " * ";
    case CDL_IE_DIV: return " / ";
    case CDL_IE_MOD: return " % ";
    default: return " ? ";
  }
}

static void print_operand_ie(FILE *out, const cdl_iexpr *e, int paren) {
  if (paren) fputc('(', out);
  cdl_print_iexpr(out, e);
  if (paren) fputc(')', out);
}

void cdl_print_iexpr(FILE *out, const cdl_iexpr *e) {
  switch (e->kind) {
    case CDL_IE_INT: fprintf(out, "%lld", (long long)e->value); return;
    case CDL_IE_NAME:
    case CDL_IE_DIM:
    case CDL_IE_ATTR:
    case CDL_IE_LET:
    case CDL_IE_LOOP: fputs(e->name ? e->name : "?", out); return;
    case CDL_IE_NEG:
    case CDL_IE_NOT:
      fputc(e->kind == CDL_IE_NEG ? '-' : '!', out);
      /* - -x rather than --x, and not -(-x): parentheses would cost the
       * parser a second level of nesting per operator, so a chain it took
       * could print to one it refuses (CDL_MAX_EXPR_DEPTH); -(a * b)
       * keeps its tree */
      if (e->a->kind == CDL_IE_NEG || e->a->kind == CDL_IE_NOT) {
        fputc(' ', out);
        cdl_print_iexpr(out, e->a);
        return;
      }
      print_operand_ie(out, e->a, prec(e->a) <= PREC_UNARY);
      return;
    case CDL_IE_MIN:
    case CDL_IE_MAX:
      fputs(e->kind == CDL_IE_MIN ? "min(" : "max(", out);
      cdl_print_iexpr(out, e->a);
      fputs(", ", out);
      cdl_print_iexpr(out, e->b);
      fputc(')', out);
      return;
    default: {
      int p = prec(e);
      /* Left-associative: a right operand of equal precedence keeps its
       * parentheses (a - (b - c)); comparisons do not chain at all. */
      print_operand_ie(out, e->a, p == PREC_CMP ? prec(e->a) <= p : prec(e->a) < p);
      fputs(binop_text(e->kind), out);
      print_operand_ie(out, e->b, prec(e->b) <= p);
      return;
    }
  }
}

const char *cdl_iexpr_str(cov_arena *arena, const cdl_iexpr *e) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return "?";
  cdl_print_iexpr(f, e);
  const char *s = fclose(f) == 0 ? cov_arena_strndup(arena, buf, len) : NULL;
  free(buf);
  return s ? s : "?";
}

/* ---- declarations ------------------------------------------------------- */

static void print_number(FILE *out, double v) {
  char buf[48];
  cdl_format_double(v, buf, sizeof buf);
  fputs(buf, out);
}

static void print_type(FILE *out, const cdl_type *ty) {
  if (ty->kind == CDL_TY_ACC_DTYPE || ty->kind == CDL_TY_ACC_PARAM)
    fprintf(out, "acc(%s)", ty->name);
  else
    fputs(ty->name, out);
}

static void print_shape(FILE *out, const cdl_operand *op) {
  fputc('[', out);
  for (int i = 0; i < op->rank; i++) {
    if (i) fputs(", ", out);
    cdl_print_iexpr(out, op->shape[i]);
  }
  fputc(']', out);
}

static void print_operands(FILE *out, const cdl_codelet *c, int from, int to) {
  for (int i = from; i < to; i++) {
    const cdl_operand *op = &c->operands[i];
    fprintf(out, "%s%s: ", i > from ? ", " : "", op->name);
    print_type(out, &op->type);
    print_shape(out, op);
  }
}

static void print_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

/* ---- statements --------------------------------------------------------- */

static void indent(FILE *out, int level) {
  for (int i = 0; i < level; i++) fputs("  ", out);
}

static void print_access(FILE *out, const cdl_access *a) {
  fputs(a->name, out);
  if (a->n_idx >= 0) {
    fputc('[', out);
    for (int i = 0; i < a->n_idx; i++) {
      if (i) fputs(", ", out);
      cdl_print_iexpr(out, a->idx[i]);
    }
    fputc(']', out);
  }
  if (a->has_else) {
    fputs(" else ", out);
    print_number(out, a->else_value);
  }
}

static void print_arg(FILE *out, const cdl_codelet *c, const cdl_arg *a) {
  switch (a->kind) {
    case CDL_ARG_ACCESS: print_access(out, &a->access); return;
    case CDL_ARG_FLOAT: print_number(out, a->f); return;
    case CDL_ARG_FATTR: fputs(c->attrs[a->attr].name, out); return;
    case CDL_ARG_INDEX: cdl_print_iexpr(out, a->ie); return;
  }
}

static void print_block(FILE *out, const cdl_codelet *c, const cdl_block *b, int level);

static void print_stmt(FILE *out, const cdl_codelet *c, const cdl_stmt *s, int level) {
  indent(out, level);
  if (s->kind == CDL_ST_ASSIGN) {
    print_access(out, &s->dst);
    fputs(" = ", out);
    if (s->op_name) fprintf(out, "%s(", s->op_name);
    for (int i = 0; i < s->n_args; i++) {
      if (i) fputs(", ", out);
      print_arg(out, c, &s->args[i]);
    }
    fputs(s->op_name ? ")\n" : "\n", out);
    return;
  }
  fputs("for ", out);
  const cdl_loop *L = &s->loop;
  for (;;) {
    fprintf(out, "%s in ", L->var);
    cdl_print_iexpr(out, L->extent);
    if (L->body.n != 1 || L->body.stmts[0]->kind != CDL_ST_LOOP) break;
    L = &L->body.stmts[0]->loop;
    fputs(", ", out);
  }
  fputs(" {\n", out);
  print_block(out, c, &L->body, level + 1);
  indent(out, level);
  fputs("}\n", out);
}

static void print_block(FILE *out, const cdl_codelet *c, const cdl_block *b, int level) {
  for (size_t i = 0; i < b->n; i++) print_stmt(out, c, b->stmts[i], level);
}

/* ---- the codelet -------------------------------------------------------- */

static void print_header(FILE *out, const cdl_codelet *c) {
  fputs(c->name, out);
  if (c->n_tparams) {
    fputc('<', out);
    for (int i = 0; i < c->n_tparams; i++) {
      const cdl_tparam *tp = &c->tparams[i];
      fprintf(out, "%s%s", i ? ", " : "", tp->name);
      if (tp->explicit_class) fprintf(out, ": %s", cdl_tclass_name(tp->tclass));
    }
    fputc('>', out);
  }
  fputc('(', out);
  print_operands(out, c, 0, c->n_inputs);
  fputs(") -> (", out);
  print_operands(out, c, c->n_inputs, c->n_inputs + c->n_outputs);
  fputc(')', out);
}

static void print_attr(FILE *out, const cdl_attr *a) {
  fprintf(out, "%s: %s", a->name, a->is_float ? "float" : "int");
  if (a->has_default) {
    fputs(" = ", out);
    if (a->is_float) print_number(out, a->def_f);
    else fprintf(out, "%lld", (long long)a->def_i);
  }
}

void cdl_print_signature(FILE *out, const cdl_codelet *c) {
  print_header(out, c);
  fputc('\n', out);
  for (int i = 0; i < c->n_attrs; i++) {
    fputs("    attr ", out);
    print_attr(out, &c->attrs[i]);
    fputc('\n', out);
  }
}

cov_status cov_codelet_print(const cov_codelet *c, FILE *out) {
  if (!c || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_codelet_print"), "NULL argument");
  fputs("codelet ", out);
  print_header(out, c);
  fputs(" {\n", out);
  for (int i = 0; i < c->n_attrs; i++) {
    fputs("  attr ", out);
    print_attr(out, &c->attrs[i]);
    fputc('\n', out);
  }
  for (int i = 0; i < c->n_decls; i++) {
    const cdl_decl *d = &c->decls[i];
    if (d->kind == CDL_LET) {
      fprintf(out, "  let %s = ", d->name);
      cdl_print_iexpr(out, d->expr);
    } else {
      fputs("  require ", out);
      cdl_print_iexpr(out, d->expr);
      if (d->message) {
        fputs(", ", out);
        print_string(out, d->message);
      }
    }
    fputc('\n', out);
  }
  int first_local = c->n_inputs + c->n_outputs;
  for (int i = first_local; i < first_local + c->n_locals; i++) {
    const cdl_operand *op = &c->operands[i];
    fprintf(out, "  local %s: ", op->name);
    print_type(out, &op->type);
    if (op->rank) print_shape(out, op);
    fputc('\n', out);
  }
  print_block(out, c, &c->body, 1);
  fputs("}\n", out);
  if (ferror(out)) return cov_error(COV_IO_ERROR, COV_AT_CALL("cov_codelet_print"), "write error while printing '%s'", c->name);
  return NULL;
}
