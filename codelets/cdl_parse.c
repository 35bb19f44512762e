/* codelets/cdl_parse.c: recursive-descent parser for the codelet language.
 *
 * One function per grammar rule of codelets/README.md, each preceded by the
 * rule it parses. The parser checks syntax and the size limits only; names,
 * types and ranks are the verifier's business (cdl_verify.c).
 *
 * A syntax error abandons the current codelet with a longjmp back to
 * parse_file, which skips to the next 'codelet' keyword, so one run reports
 * the first error of every codelet of a file without cascades. Everything is
 * allocated from the arena, so abandoning half-built IR leaks nothing. */
#include "codelets/cdl_parse.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codelets/cdl_lex.h"

typedef struct parser {
  cov_arena *arena;
  const char *file;
  cdl_lexer lx;
  cdl_token tok;   /* current token */
  cdl_token ahead; /* one token of lookahead, when has_ahead */
  int has_ahead;
  int expr_depth;
  int loop_depth;
  cdl_codelet *c; /* the codelet being parsed */
  cov_status errors;
  jmp_buf fail;
} parser;

/* ---- tokens and diagnostics -------------------------------------------- */

static void advance(parser *P) {
  if (P->has_ahead) {
    P->tok = P->ahead;
    P->has_ahead = 0;
  } else {
    P->tok = cdl_lex_next(&P->lx);
  }
}

static const cdl_token *peek(parser *P) {
  if (!P->has_ahead) {
    P->ahead = cdl_lex_next(&P->lx);
    P->has_ahead = 1;
  }
  return &P->ahead;
}

static cov_loc tok_loc(const parser *P, const cdl_token *t) {
  cov_loc loc = {.file = P->file, .line = t->line, .col = t->col};
  return loc;
}

/* The token as the user wrote it, quoted, for "near ..." (Lua's wording). */
static void near_text(const cdl_token *t, char *buf, size_t size) {
  if (t->kind == CDL_TK_EOF) {
    snprintf(buf, size, "end of file");
    return;
  }
  size_t n = 0;
  buf[n++] = '\'';
  for (size_t i = 0; i < t->len && n + 6 < size; i++) {
    unsigned char ch = (unsigned char)t->start[i];
    if (i == 32) {
      n += (size_t)snprintf(buf + n, size - n, "...");
      break;
    }
    if (ch >= 0x20 && ch < 0x7f) buf[n++] = (char)ch;
    else n += (size_t)snprintf(buf + n, size - n, "\\x%02x", ch);
  }
  buf[n++] = '\'';
  buf[n] = '\0';
}

static _Noreturn void fail_at(parser *P, const cdl_token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static _Noreturn void fail_at(parser *P, const cdl_token *t, const char *fmt, ...) {
  char msg[256], near[80];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  near_text(t, near, sizeof near);
  cov_loc loc = tok_loc(P, t);
  const char *what = t->kind == CDL_TK_ERROR ? t->error : msg;
  P->errors = cov_status_join(P->errors,
                              cov_error(COV_PARSE_ERROR, &loc, "%s near %s", what, near));
  longjmp(P->fail, 1);
}

static _Noreturn void fail_oom(parser *P) {
  cov_loc loc = tok_loc(P, &P->tok);
  P->errors = cov_status_join(P->errors,
                              cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory parsing"));
  longjmp(P->fail, 1);
}

static _Noreturn void fail_expected(parser *P, const char *what) {
  fail_at(P, &P->tok, "expected %s", what);
}

static void *alloc(parser *P, size_t size) {
  void *p = cov_arena_alloc(P->arena, size);
  if (!p) fail_oom(P);
  return p;
}

/* Appends one element to an arena array of *n elements with capacity *cap. */
static void *push(parser *P, void *arr, size_t *n, size_t *cap, size_t elem) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 4;
    arr = cov_arena_grow(P->arena, arr, *n, ncap, elem);
    if (!arr) fail_oom(P);
    *cap = ncap;
  }
  (*n)++;
  return arr;
}

static int accept(parser *P, cdl_tok_kind kind) {
  if (P->tok.kind != kind) return 0;
  advance(P);
  return 1;
}

static cdl_token expect(parser *P, cdl_tok_kind kind) {
  if (P->tok.kind != kind) fail_expected(P, cdl_tok_kind_desc(kind));
  cdl_token t = P->tok;
  advance(P);
  return t;
}

static const char *tok_str(parser *P, const cdl_token *t) {
  char *s = cov_arena_strndup(P->arena, t->start, t->len);
  if (!s) fail_oom(P);
  return s;
}

static const char *expect_name(parser *P, const char *what) {
  if (P->tok.kind != CDL_TK_NAME) fail_expected(P, what);
  const char *s = tok_str(P, &P->tok);
  advance(P);
  return s;
}

/* ---- index expressions ------------------------------------------------- */

static cdl_iexpr *new_expr(parser *P, cdl_iexpr_kind kind, cov_loc loc) {
  cdl_iexpr *e = alloc(P, sizeof *e);
  e->kind = kind;
  e->loc = loc;
  return e;
}

/* Left-nested chains (a + b + c ...) are built by loops, not recursion, so
 * the tree height is checked here: every later pass recurses over it. */
static cdl_iexpr *binary(parser *P, cdl_iexpr_kind kind, cdl_iexpr *a, cdl_iexpr *b) {
  cdl_iexpr *e = new_expr(P, kind, a->loc);
  e->a = a;
  e->b = b;
  e->height = 1 + (a->height > b->height ? a->height : b->height);
  if (e->height > CDL_MAX_EXPR_DEPTH) fail_at(P, &P->tok, "expression nested too deeply");
  return e;
}

static cdl_iexpr *parse_iexpr(parser *P);

/* primary = INT | NAME | "(" iexpr ")" | ( "min" | "max" ) "(" iexpr "," iexpr ")" */
static cdl_iexpr *parse_primary(parser *P) {
  cdl_token t = P->tok;
  cov_loc loc = tok_loc(P, &t);
  if (t.kind == CDL_TK_INT) {
    advance(P);
    cdl_iexpr *e = new_expr(P, CDL_IE_INT, loc);
    e->value = t.ival;
    return e;
  }
  if (t.kind == CDL_TK_NAME) {
    int is_min = t.len == 3 && memcmp(t.start, "min", 3) == 0;
    int is_max = t.len == 3 && memcmp(t.start, "max", 3) == 0;
    if ((is_min || is_max) && peek(P)->kind == CDL_TK_LPAREN) {
      advance(P);
      advance(P);
      cdl_iexpr *a = parse_iexpr(P);
      expect(P, CDL_TK_COMMA);
      cdl_iexpr *b = parse_iexpr(P);
      expect(P, CDL_TK_RPAREN);
      cdl_iexpr *e = binary(P, is_min ? CDL_IE_MIN : CDL_IE_MAX, a, b);
      e->loc = loc;
      return e;
    }
    advance(P);
    cdl_iexpr *e = new_expr(P, CDL_IE_NAME, loc);
    e->name = tok_str(P, &t);
    return e;
  }
  if (t.kind == CDL_TK_LPAREN) {
    advance(P);
    cdl_iexpr *e = parse_iexpr(P);
    expect(P, CDL_TK_RPAREN);
    return e;
  }
  fail_expected(P, "an index expression");
}

/* unary = ( "-" | "!" ) unary | primary */
static cdl_iexpr *parse_unary(parser *P) {
  if (P->tok.kind != CDL_TK_MINUS && P->tok.kind != CDL_TK_NOT) return parse_primary(P);
  cdl_token op = P->tok;
  if (++P->expr_depth > CDL_MAX_EXPR_DEPTH) fail_at(P, &op, "expression nested too deeply");
  advance(P);
  cdl_iexpr *a = parse_unary(P);
  P->expr_depth--;
  /* A negative literal is one INT node, so `-1` prints back as written. */
  if (op.kind == CDL_TK_MINUS && a->kind == CDL_IE_INT && a->value != INT64_MIN) {
    a->value = -a->value;
    a->loc = tok_loc(P, &op);
    return a;
  }
  cdl_iexpr *e = new_expr(P, op.kind == CDL_TK_MINUS ? CDL_IE_NEG : CDL_IE_NOT, tok_loc(P, &op));
  e->a = a;
  e->height = a->height + 1;
  return e;
}

/* term = unary { ( "*" | "/" | "%" ) unary } */
static cdl_iexpr *parse_term(parser *P) {
  cdl_iexpr *e = parse_unary(P);
  for (;;) {
    cdl_iexpr_kind k;
    if (P->tok.kind == CDL_TK_STAR) k = CDL_IE_MUL;
    else if (P->tok.kind == CDL_TK_SLASH) k = CDL_IE_DIV;
    else if (P->tok.kind == CDL_TK_PERCENT) k = CDL_IE_MOD;
    else return e;
    advance(P);
    e = binary(P, k, e, parse_unary(P));
  }
}

/* sum = term { ( "+" | "-" ) term } */
static cdl_iexpr *parse_sum(parser *P) {
  cdl_iexpr *e = parse_term(P);
  for (;;) {
    cdl_iexpr_kind k;
    if (P->tok.kind == CDL_TK_PLUS) k = CDL_IE_ADD;
    else if (P->tok.kind == CDL_TK_MINUS) k = CDL_IE_SUB;
    else return e;
    advance(P);
    e = binary(P, k, e, parse_term(P));
  }
}

/* cmp = sum [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) sum ] */
static cdl_iexpr *parse_cmp(parser *P) {
  cdl_iexpr *e = parse_sum(P);
  cdl_iexpr_kind k;
  switch (P->tok.kind) {
    case CDL_TK_EQ: k = CDL_IE_EQ; break;
    case CDL_TK_NE: k = CDL_IE_NE; break;
    case CDL_TK_LT: k = CDL_IE_LT; break;
    case CDL_TK_LE: k = CDL_IE_LE; break;
    case CDL_TK_GT: k = CDL_IE_GT; break;
    case CDL_TK_GE: k = CDL_IE_GE; break;
    default: return e;
  }
  advance(P);
  return binary(P, k, e, parse_sum(P));
}

/* and = cmp { "&&" cmp } */
static cdl_iexpr *parse_and(parser *P) {
  cdl_iexpr *e = parse_cmp(P);
  while (accept(P, CDL_TK_AND)) e = binary(P, CDL_IE_AND, e, parse_cmp(P));
  return e;
}

/* iexpr = and { "||" and } */
static cdl_iexpr *parse_iexpr(parser *P) {
  if (++P->expr_depth > CDL_MAX_EXPR_DEPTH) fail_at(P, &P->tok, "expression nested too deeply");
  cdl_iexpr *e = parse_and(P);
  while (accept(P, CDL_TK_OR)) e = binary(P, CDL_IE_OR, e, parse_and(P));
  P->expr_depth--;
  return e;
}

/* ---- numbers, types, shapes -------------------------------------------- */

typedef struct number {
  int is_int;
  int64_t i;
  double f;
} number;

/* number = [ "-" ] ( INT | FLOAT | "inf" ) */
static number parse_number(parser *P) {
  number n = {0};
  int neg = accept(P, CDL_TK_MINUS);
  cdl_token t = P->tok;
  if (t.kind == CDL_TK_INT) {
    n.is_int = 1;
    n.i = neg ? -t.ival : t.ival;
    n.f = (double)n.i;
  } else if (t.kind == CDL_TK_FLOAT) {
    n.f = neg ? -t.fval : t.fval;
  } else if (t.kind == CDL_TK_INF) {
    n.f = neg ? -INFINITY : INFINITY;
  } else {
    fail_expected(P, "a number");
  }
  advance(P);
  return n;
}

/* type = NAME | "acc" "(" NAME ")"
 * ("acc" is not reserved: it means the accumulator type only before '(',
 * so a local may still be called acc). */
static cdl_type parse_type(parser *P) {
  cdl_type ty = {0};
  ty.loc = tok_loc(P, &P->tok);
  int acc = P->tok.kind == CDL_TK_NAME && P->tok.len == 3 && memcmp(P->tok.start, "acc", 3) == 0 &&
            peek(P)->kind == CDL_TK_LPAREN;
  if (acc) {
    advance(P);
    advance(P);
  }
  ty.name = expect_name(P, acc ? "a dtype or type parameter" : "a type");
  ty.dtype = cov_dtype_from_name(ty.name);
  /* the FP8 formats are datapath dtypes of an ACG, not element types of a
   * codelet's tensors */
  if (ty.dtype == COV_E4M3 || ty.dtype == COV_E5M2) ty.dtype = COV_DTYPE_INVALID;
  if (ty.dtype) ty.kind = acc ? CDL_TY_ACC_DTYPE : CDL_TY_DTYPE;
  else ty.kind = acc ? CDL_TY_ACC_PARAM : CDL_TY_PARAM;
  ty.tparam = -1;
  if (acc) expect(P, CDL_TK_RPAREN);
  return ty;
}

/* shape = "[" [ iexpr { "," iexpr } ] "]" */
static void parse_shape(parser *P, cdl_operand *op) {
  expect(P, CDL_TK_LBRACKET);
  size_t n = 0, cap = 0;
  cdl_iexpr **dims = NULL;
  if (P->tok.kind != CDL_TK_RBRACKET) {
    do {
      if (n == COV_MAX_RANK) fail_at(P, &P->tok, "more than %d dimensions", COV_MAX_RANK);
      dims = push(P, dims, &n, &cap, sizeof *dims);
      dims[n - 1] = parse_iexpr(P);
    } while (accept(P, CDL_TK_COMMA));
  }
  expect(P, CDL_TK_RBRACKET);
  op->rank = (int)n;
  op->shape = dims;
}

/* ---- signature --------------------------------------------------------- */

/* tparams = "<" tparam { "," tparam } ">"
 * tparam  = NAME [ ":" ( "float" | "int" | "any" ) ] */
static void parse_tparams(parser *P) {
  cdl_codelet *c = P->c;
  size_t n = 0, cap = 0;
  do {
    if (n == CDL_MAX_TPARAMS) fail_at(P, &P->tok, "more than %d type parameters", CDL_MAX_TPARAMS);
    c->tparams = push(P, c->tparams, &n, &cap, sizeof *c->tparams);
    cdl_tparam *tp = &c->tparams[n - 1];
    tp->loc = tok_loc(P, &P->tok);
    tp->name = expect_name(P, "a type parameter name");
    if (accept(P, CDL_TK_COLON)) {
      tp->explicit_class = 1;
      if (accept(P, CDL_TK_FLOATTYPE)) tp->tclass = CDL_TC_FLOAT;
      else if (accept(P, CDL_TK_INTTYPE)) tp->tclass = CDL_TC_INT;
      else if (accept(P, CDL_TK_ANY)) tp->tclass = CDL_TC_ANY;
      else fail_expected(P, "'float', 'int' or 'any'");
    }
  } while (accept(P, CDL_TK_COMMA));
  expect(P, CDL_TK_GT);
  c->n_tparams = (int)n;
}

/* operand = NAME ":" type shape */
static void parse_operand(parser *P, cdl_operand *op, cdl_role role) {
  op->loc = tok_loc(P, &P->tok);
  op->name = expect_name(P, role == CDL_INPUT ? "an input name" : "an output name");
  op->role = role;
  expect(P, CDL_TK_COLON);
  op->type = parse_type(P);
  parse_shape(P, op);
}

/* operands = operand { "," operand } */
static void parse_operands(parser *P, cdl_role role, cdl_operand **arr, size_t *n, size_t *cap) {
  size_t first = *n;
  do {
    if (*n - first == CDL_MAX_OPERANDS)
      fail_at(P, &P->tok, "more than %d %s", CDL_MAX_OPERANDS,
              role == CDL_INPUT ? "inputs" : "outputs");
    *arr = push(P, *arr, n, cap, sizeof **arr);
    parse_operand(P, &(*arr)[*n - 1], role);
  } while (accept(P, CDL_TK_COMMA));
}

/* ---- declarations ------------------------------------------------------ */

/* attr = "attr" NAME ":" ( "int" | "float" ) [ "=" number ] */
static void parse_attr(parser *P, cdl_attr *a) {
  expect(P, CDL_TK_ATTR);
  a->loc = tok_loc(P, &P->tok);
  a->name = expect_name(P, "an attribute name");
  expect(P, CDL_TK_COLON);
  if (accept(P, CDL_TK_FLOATTYPE)) a->is_float = 1;
  else if (!accept(P, CDL_TK_INTTYPE)) fail_expected(P, "'int' or 'float'");
  if (accept(P, CDL_TK_ASSIGN)) {
    cdl_token t = P->tok;
    number n = parse_number(P);
    if (!a->is_float && !n.is_int)
      fail_at(P, &t, "default of int attribute '%s' must be an integer", a->name);
    a->has_default = 1;
    a->def_i = n.i;
    a->def_f = n.f;
  }
}

/* let = "let" NAME "=" iexpr */
static void parse_let(parser *P, cdl_decl *d) {
  expect(P, CDL_TK_LET);
  d->kind = CDL_LET;
  d->loc = tok_loc(P, &P->tok);
  d->name = expect_name(P, "a name");
  expect(P, CDL_TK_ASSIGN);
  d->expr = parse_iexpr(P);
}

/* require = "require" iexpr [ "," STRING ] */
static void parse_require(parser *P, cdl_decl *d) {
  d->kind = CDL_REQUIRE;
  d->loc = tok_loc(P, &P->tok);
  expect(P, CDL_TK_REQUIRE);
  d->expr = parse_iexpr(P);
  if (accept(P, CDL_TK_COMMA)) {
    cdl_token s = expect(P, CDL_TK_STRING);
    /* Unescape \" and \\ (the lexer allows no other escapes). */
    char *m = alloc(P, s.len);
    size_t n = 0;
    for (size_t i = 1; i + 1 < s.len; i++) {
      if (s.start[i] == '\\') i++;
      m[n++] = s.start[i];
    }
    m[n] = '\0';
    d->message = m;
  }
}

/* local = "local" NAME ":" type [ shape ] */
static void parse_local(parser *P, cdl_operand *op) {
  expect(P, CDL_TK_LOCAL);
  op->loc = tok_loc(P, &P->tok);
  op->name = expect_name(P, "a local name");
  op->role = CDL_LOCAL;
  expect(P, CDL_TK_COLON);
  op->type = parse_type(P);
  if (P->tok.kind == CDL_TK_LBRACKET) parse_shape(P, op);
}

/* ---- statements -------------------------------------------------------- */

/* NAME [ "[" iexpr { "," iexpr } "]" ]: a destination, or (brackets
 * required) a tensor operand of a statement */
static void parse_access(parser *P, cdl_access *acc, int need_brackets) {
  acc->loc = tok_loc(P, &P->tok);
  acc->name = expect_name(P, "a tensor or local name");
  acc->operand = -1;
  acc->n_idx = -1;
  if (!need_brackets && P->tok.kind != CDL_TK_LBRACKET) return;
  expect(P, CDL_TK_LBRACKET);
  size_t n = 0, cap = 0;
  do {
    if (n == COV_MAX_RANK) fail_at(P, &P->tok, "more than %d indices", COV_MAX_RANK);
    acc->idx = push(P, acc->idx, &n, &cap, sizeof *acc->idx);
    acc->idx[n - 1] = parse_iexpr(P);
  } while (accept(P, CDL_TK_COMMA));
  expect(P, CDL_TK_RBRACKET);
  acc->n_idx = (int)n;
}

/* arg = NAME "[" iexpr { "," iexpr } "]" [ "else" number ]
 *     | [ "-" ] ( FLOAT | "inf" )
 *     | iexpr */
static void parse_arg(parser *P, cdl_arg *arg) {
  arg->loc = tok_loc(P, &P->tok);
  cdl_tok_kind k = P->tok.kind;
  if (k == CDL_TK_MINUS) k = peek(P)->kind == CDL_TK_INT ? CDL_TK_INT : peek(P)->kind;
  if (k == CDL_TK_FLOAT || k == CDL_TK_INF) {
    arg->kind = CDL_ARG_FLOAT;
    arg->f = parse_number(P).f;
    return;
  }
  if (P->tok.kind == CDL_TK_NAME && peek(P)->kind == CDL_TK_LBRACKET) {
    arg->kind = CDL_ARG_ACCESS;
    parse_access(P, &arg->access, 1);
    if (accept(P, CDL_TK_ELSE)) {
      arg->access.has_else = 1;
      arg->access.else_value = parse_number(P).f;
    }
    return;
  }
  arg->kind = CDL_ARG_INDEX;
  arg->ie = parse_iexpr(P);
}

/* assign = NAME [ "[" iexpr { "," iexpr } "]" ] "=" ( call | arg )
 * call   = NAME "(" arg { "," arg } ")" */
static void parse_assign(parser *P, cdl_stmt *s) {
  s->kind = CDL_ST_ASSIGN;
  s->loc = tok_loc(P, &P->tok);
  if (++P->c->n_stmts > CDL_MAX_STMTS)
    fail_at(P, &P->tok, "more than %d statements in one codelet", CDL_MAX_STMTS);
  parse_access(P, &s->dst, 0);
  expect(P, CDL_TK_ASSIGN);
  s->op_loc = tok_loc(P, &P->tok);
  if (P->tok.kind == CDL_TK_NAME && peek(P)->kind == CDL_TK_LPAREN) {
    s->op_name = tok_str(P, &P->tok);
    advance(P);
    advance(P);
    size_t n = 0, cap = 0;
    do {
      if (n == CDL_MAX_ARGS) fail_at(P, &P->tok, "more than %d operands", CDL_MAX_ARGS);
      s->args = push(P, s->args, &n, &cap, sizeof *s->args);
      parse_arg(P, &s->args[n - 1]);
    } while (accept(P, CDL_TK_COMMA));
    if (P->tok.kind != CDL_TK_RPAREN) {
      if (P->tok.kind == CDL_TK_LPAREN)
        fail_at(P, &P->tok,
                "one operation per statement (use a local for the intermediate value)");
      fail_expected(P, "',' or ')'");
    }
    advance(P);
    s->n_args = (int)n;
    return;
  }
  s->args = alloc(P, sizeof *s->args);
  s->n_args = 1;
  parse_arg(P, &s->args[0]);
}

static void parse_block(parser *P, cdl_block *b, int top);

/* loop = "for" NAME "in" iexpr { "," NAME "in" iexpr } "{" { stmt } "}"
 * Each NAME opens a loop nested in the previous one. */
static void parse_loop(parser *P, cdl_stmt *s) {
  cdl_token for_tok = expect(P, CDL_TK_FOR);
  cdl_stmt *cur = s;
  int opened = 0;
  for (;;) {
    if (++P->loop_depth > CDL_MAX_LOOP_DEPTH)
      fail_at(P, &P->tok, "loops nested more than %d deep", CDL_MAX_LOOP_DEPTH);
    opened++;
    cur->kind = CDL_ST_LOOP;
    cur->loc = opened == 1 ? tok_loc(P, &for_tok) : tok_loc(P, &P->tok);
    cur->loop.loc = tok_loc(P, &P->tok);
    cur->loop.var = expect_name(P, "a loop variable");
    cur->loop.id = -1;
    expect(P, CDL_TK_IN);
    cur->loop.extent = parse_iexpr(P);
    if (!accept(P, CDL_TK_COMMA)) break;
    cdl_stmt *inner = alloc(P, sizeof *inner);
    cur->loop.body.n = 1;
    cur->loop.body.stmts = alloc(P, sizeof *cur->loop.body.stmts);
    cur->loop.body.stmts[0] = inner;
    cur = inner;
  }
  parse_block(P, &cur->loop.body, 0);
  P->loop_depth -= opened;
}

/* item = attr | let | require | local | stmt
 * stmt = loop | assign
 * A block is `{ item* }` at the top of a codelet and `{ stmt* }` in a loop. */
static void parse_block(parser *P, cdl_block *b, int top) {
  cdl_codelet *c = P->c;
  size_t n = b->n, cap = b->n;
  size_t n_attrs = (size_t)c->n_attrs, n_decls = (size_t)c->n_decls;
  size_t n_ops = (size_t)(c->n_inputs + c->n_outputs + c->n_locals);
  size_t cap_attrs = n_attrs, cap_decls = n_decls, cap_ops = n_ops;
  expect(P, CDL_TK_LBRACE);
  while (P->tok.kind != CDL_TK_RBRACE) {
    cdl_tok_kind k = P->tok.kind;
    int is_decl = k == CDL_TK_ATTR || k == CDL_TK_LET || k == CDL_TK_REQUIRE || k == CDL_TK_LOCAL;
    if (is_decl && !top)
      fail_at(P, &P->tok, "%s must be at the top level of the codelet, not inside a loop",
              cdl_tok_kind_desc(k));
    if (k == CDL_TK_ATTR) {
      if (n_attrs == CDL_MAX_DECLS) fail_at(P, &P->tok, "more than %d attributes", CDL_MAX_DECLS);
      c->attrs = push(P, c->attrs, &n_attrs, &cap_attrs, sizeof *c->attrs);
      parse_attr(P, &c->attrs[n_attrs - 1]);
      c->n_attrs = (int)n_attrs;
    } else if (k == CDL_TK_LET || k == CDL_TK_REQUIRE) {
      if (n_decls == CDL_MAX_DECLS)
        fail_at(P, &P->tok, "more than %d lets and requires", CDL_MAX_DECLS);
      c->decls = push(P, c->decls, &n_decls, &cap_decls, sizeof *c->decls);
      if (k == CDL_TK_LET) parse_let(P, &c->decls[n_decls - 1]);
      else parse_require(P, &c->decls[n_decls - 1]);
      c->n_decls = (int)n_decls;
    } else if (k == CDL_TK_LOCAL) {
      if (c->n_locals == CDL_MAX_OPERANDS)
        fail_at(P, &P->tok, "more than %d locals", CDL_MAX_OPERANDS);
      c->operands = push(P, c->operands, &n_ops, &cap_ops, sizeof *c->operands);
      parse_local(P, &c->operands[n_ops - 1]);
      c->n_locals++;
    } else if (k == CDL_TK_FOR || k == CDL_TK_NAME) {
      b->stmts = push(P, b->stmts, &n, &cap, sizeof *b->stmts);
      cdl_stmt *s = alloc(P, sizeof *s);
      b->stmts[n - 1] = s;
      b->n = n;
      if (k == CDL_TK_FOR) parse_loop(P, s);
      else parse_assign(P, s);
    } else if (top) {
      fail_expected(P, "'attr', 'let', 'require', 'local', 'for', a statement or '}'");
    } else {
      fail_expected(P, "'for', a statement or '}'");
    }
  }
  advance(P);
}

/* ---- codelets ---------------------------------------------------------- */

/* codelet = "codelet" NAME [ tparams ] "(" operands ")" "->" "(" operands ")"
 *           "{" { item } "}" */
static void parse_codelet(parser *P) {
  cdl_codelet *c = P->c;
  expect(P, CDL_TK_CODELET);
  c->loc = tok_loc(P, &P->tok);
  c->file = P->file;
  c->name = expect_name(P, "a codelet name");
  if (accept(P, CDL_TK_LT)) parse_tparams(P);
  size_t n = 0, cap = 0;
  expect(P, CDL_TK_LPAREN);
  parse_operands(P, CDL_INPUT, &c->operands, &n, &cap);
  c->n_inputs = (int)n;
  expect(P, CDL_TK_RPAREN);
  expect(P, CDL_TK_ARROW);
  expect(P, CDL_TK_LPAREN);
  parse_operands(P, CDL_OUTPUT, &c->operands, &n, &cap);
  c->n_outputs = (int)n - c->n_inputs;
  expect(P, CDL_TK_RPAREN);
  parse_block(P, &c->body, 1);
}

/* Parses one codelet; on a syntax error returns 0 with the error recorded.
 * Kept apart from parse_file so that no local of the caller lives across
 * the longjmp. */
static int try_codelet(parser *P) {
  P->c = cov_arena_alloc(P->arena, sizeof *P->c);
  if (!P->c) {
    P->errors = cov_status_join(P->errors, cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"));
    return -1;
  }
  P->expr_depth = 0;
  P->loop_depth = 0;
  if (setjmp(P->fail)) return 0;
  parse_codelet(P);
  return 1;
}

/* Records "expected 'codelet'" for a token between codelets. */
static void report_stray(parser *P) {
  if (setjmp(P->fail) == 0) fail_expected(P, "'codelet'");
}

/* file = { codelet } EOF */
cov_status cdl_parse(cov_arena *arena, const char *text, size_t size, const char *file,
                     cdl_codelet ***out, size_t *out_n) {
  *out = NULL;
  *out_n = 0;
  parser *P = cov_arena_alloc(arena, sizeof *P); /* jmp_buf is large: keep it off the stack */
  if (!P) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  P->arena = arena;
  P->file = file;
  cdl_lex_init(&P->lx, text, size);
  advance(P);
  size_t n = 0, cap = 0;
  cdl_codelet **list = NULL;
  while (P->tok.kind != CDL_TK_EOF) {
    if (P->tok.kind != CDL_TK_CODELET) {
      report_stray(P);
      advance(P);
    } else {
      int ok = try_codelet(P);
      if (ok < 0) break;
      if (ok) {
        if (n == CDL_MAX_CODELETS) {
          cov_loc loc = P->c->loc;
          P->errors = cov_status_join(
              P->errors, cov_error(COV_OUT_OF_RANGE, &loc, "more than %d codelets in one file",
                                   CDL_MAX_CODELETS));
          break;
        }
        if (n == cap) {
          size_t ncap = cap ? cap * 2 : 8;
          cdl_codelet **nl = cov_arena_grow(arena, list, n, ncap, sizeof *nl);
          if (!nl) {
            P->errors = cov_status_join(P->errors,
                                        cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"));
            break;
          }
          list = nl;
          cap = ncap;
        }
        list[n++] = P->c;
        continue;
      }
    }
    /* Resynchronise at the next 'codelet'. A codelet always consumes its own
     * keyword first, so this makes progress even when the error was found
     * at the next codelet's keyword. */
    while (P->tok.kind != CDL_TK_CODELET && P->tok.kind != CDL_TK_EOF) advance(P);
  }
  *out = list;
  *out_n = n;
  return P->errors;
}
