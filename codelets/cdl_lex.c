/* codelets/cdl_lex.c: the codelet lexer (see cdl_lex.h).
 *
 * Positions are 1-based line and byte column. Numbers are converted here so
 * that range errors point at the literal; strtod gets a bounded copy because
 * the source text is not necessarily NUL-terminated at the token's end. */
#include "codelets/cdl_lex.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cdl_ir.h"
#include "common/c_locale.h"

static const struct {
  const char *word;
  cdl_tok_kind kind;
} k_reserved[] = {
    {"codelet", CDL_TK_CODELET}, {"attr", CDL_TK_ATTR},       {"let", CDL_TK_LET},
    {"require", CDL_TK_REQUIRE}, {"local", CDL_TK_LOCAL},     {"for", CDL_TK_FOR},
    {"in", CDL_TK_IN},           {"else", CDL_TK_ELSE},       {"int", CDL_TK_INTTYPE},
    {"float", CDL_TK_FLOATTYPE}, {"any", CDL_TK_ANY},         {"inf", CDL_TK_INF},
};

void cdl_lex_init(cdl_lexer *lx, const char *src, size_t size) {
  lx->src = lx->p = lx->line_start = src;
  lx->end = src + size;
  lx->line = 1;
}

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static cdl_token make(cdl_lexer *lx, cdl_tok_kind kind, const char *start) {
  cdl_token t = {0};
  t.kind = kind;
  t.start = start;
  t.len = (size_t)(lx->p - start);
  t.line = lx->line;
  t.col = (unsigned)(start - lx->line_start) + 1;
  return t;
}

static cdl_token error_tok(cdl_lexer *lx, const char *start, const char *msg) {
  cdl_token t = make(lx, CDL_TK_ERROR, start);
  t.error = msg;
  return t;
}

static void skip_space(cdl_lexer *lx) {
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (c == '\n') {
      lx->p++;
      lx->line++;
      lx->line_start = lx->p;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      lx->p++;
    } else if (c == '#') {
      while (lx->p < lx->end && *lx->p != '\n') lx->p++;
    } else {
      break;
    }
  }
}

static cdl_token lex_number(cdl_lexer *lx) {
  const char *start = lx->p;
  int is_float = 0;
  while (lx->p < lx->end && is_digit(*lx->p)) lx->p++;
  if (lx->p < lx->end && *lx->p == '.') {
    is_float = 1;
    lx->p++;
    if (lx->p >= lx->end || !is_digit(*lx->p)) return error_tok(lx, start, "malformed number");
    while (lx->p < lx->end && is_digit(*lx->p)) lx->p++;
  }
  if (lx->p < lx->end && (*lx->p == 'e' || *lx->p == 'E')) {
    is_float = 1;
    lx->p++;
    if (lx->p < lx->end && (*lx->p == '+' || *lx->p == '-')) lx->p++;
    if (lx->p >= lx->end || !is_digit(*lx->p)) return error_tok(lx, start, "malformed number");
    while (lx->p < lx->end && is_digit(*lx->p)) lx->p++;
  }
  if (lx->p < lx->end && (is_alpha(*lx->p) || is_digit(*lx->p) || *lx->p == '.')) {
    while (lx->p < lx->end && (is_alpha(*lx->p) || is_digit(*lx->p) || *lx->p == '.')) lx->p++;
    return error_tok(lx, start, "malformed number");
  }
  size_t len = (size_t)(lx->p - start);
  if (len > 400) return error_tok(lx, start, "number literal too long");
  if (!is_float) {
    int64_t v = 0;
    for (const char *q = start; q < lx->p; q++)
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *q - '0', &v))
        return error_tok(lx, start, "integer literal too large");
    cdl_token t = make(lx, CDL_TK_INT, start);
    t.ival = v;
    return t;
  }
  char buf[401];
  memcpy(buf, start, len);
  buf[len] = '\0';
  errno = 0;
  double v = common_strtod(buf, NULL); /* '.' whatever the caller's locale */
  if (isinf(v)) return error_tok(lx, start, "float literal out of range");
  cdl_token t = make(lx, CDL_TK_FLOAT, start);
  t.fval = v;
  return t;
}

static cdl_token lex_string(cdl_lexer *lx) {
  const char *start = lx->p++;
  while (lx->p < lx->end && *lx->p != '"') {
    if (*lx->p == '\n') return error_tok(lx, start, "unterminated string");
    if (*lx->p == '\0') return error_tok(lx, start, "NUL byte in string");
    if (*lx->p == '\\') {
      if (lx->p + 1 >= lx->end || (lx->p[1] != '"' && lx->p[1] != '\\'))
        return error_tok(lx, start, "invalid escape in string (only \\\" and \\\\)");
      lx->p++;
    }
    lx->p++;
  }
  if (lx->p >= lx->end) return error_tok(lx, start, "unterminated string");
  lx->p++;
  if ((size_t)(lx->p - start) > CDL_MAX_STRING + 2)
    return error_tok(lx, start, "string longer than 256 characters");
  return make(lx, CDL_TK_STRING, start);
}

cdl_token cdl_lex_next(cdl_lexer *lx) {
  skip_space(lx);
  const char *start = lx->p;
  if (lx->p >= lx->end) return make(lx, CDL_TK_EOF, start);
  char c = *lx->p;
  if (is_alpha(c)) {
    while (lx->p < lx->end && (is_alpha(*lx->p) || is_digit(*lx->p))) lx->p++;
    size_t len = (size_t)(lx->p - start);
    if (len > CDL_MAX_NAME) return error_tok(lx, start, "name longer than 64 characters");
    for (size_t i = 0; i < sizeof k_reserved / sizeof *k_reserved; i++)
      if (strlen(k_reserved[i].word) == len && memcmp(k_reserved[i].word, start, len) == 0)
        return make(lx, k_reserved[i].kind, start);
    return make(lx, CDL_TK_NAME, start);
  }
  if (is_digit(c)) return lex_number(lx);
  if (c == '"') return lex_string(lx);
  lx->p++;
  char n = lx->p < lx->end ? *lx->p : '\0';
#define TWO(second, kind)    \
  if (n == (second)) {       \
    lx->p++;                 \
    return make(lx, kind, start); \
  }
  switch (c) {
    case '(': return make(lx, CDL_TK_LPAREN, start);
    case ')': return make(lx, CDL_TK_RPAREN, start);
    case '[': return make(lx, CDL_TK_LBRACKET, start);
    case ']': return make(lx, CDL_TK_RBRACKET, start);
    case '{': return make(lx, CDL_TK_LBRACE, start);
    case '}': return make(lx, CDL_TK_RBRACE, start);
    case ',': return make(lx, CDL_TK_COMMA, start);
    case ':': return make(lx, CDL_TK_COLON, start);
    case '+': return make(lx, CDL_TK_PLUS, start);
    case '*': return make(lx, CDL_TK_STAR, start);
    case '/': return make(lx, CDL_TK_SLASH, start);
    case '%': return make(lx, CDL_TK_PERCENT, start);
    case '-': TWO('>', CDL_TK_ARROW) return make(lx, CDL_TK_MINUS, start);
    case '=': TWO('=', CDL_TK_EQ) return make(lx, CDL_TK_ASSIGN, start);
    case '!': TWO('=', CDL_TK_NE) return make(lx, CDL_TK_NOT, start);
    case '<': TWO('=', CDL_TK_LE) return make(lx, CDL_TK_LT, start);
    case '>': TWO('=', CDL_TK_GE) return make(lx, CDL_TK_GT, start);
    case '&': TWO('&', CDL_TK_AND) break;
    case '|': TWO('|', CDL_TK_OR) break;
    default: break;
  }
#undef TWO
  return error_tok(lx, start, "unexpected character");
}

const char *cdl_tok_kind_desc(cdl_tok_kind kind) {
  switch (kind) {
    case CDL_TK_EOF: return "end of file";
    case CDL_TK_ERROR: return "an invalid token";
    case CDL_TK_NAME: return "a name";
    case CDL_TK_INT: return "an integer";
    case CDL_TK_FLOAT: return "a number";
    case CDL_TK_STRING: return "a string";
    case CDL_TK_CODELET: return "'codelet'";
    case CDL_TK_ATTR: return "'attr'";
    case CDL_TK_LET: return "'let'";
    case CDL_TK_REQUIRE: return "'require'";
    case CDL_TK_LOCAL: return "'local'";
    case CDL_TK_FOR: return "'for'";
    case CDL_TK_IN: return "'in'";
    case CDL_TK_ELSE: return "'else'";
    case CDL_TK_INTTYPE: return "'int'";
    case CDL_TK_FLOATTYPE: return "'float'";
    case CDL_TK_ANY: return "'any'";
    case CDL_TK_INF: return "'inf'";
    case CDL_TK_LPAREN: return "'('";
    case CDL_TK_RPAREN: return "')'";
    case CDL_TK_LBRACKET: return "'['";
    case CDL_TK_RBRACKET: return "']'";
    case CDL_TK_LBRACE: return "'{'";
    case CDL_TK_RBRACE: return "'}'";
    case CDL_TK_COMMA: return "','";
    case CDL_TK_COLON: return "':'";
    case CDL_TK_ASSIGN: return "'='";
    case CDL_TK_ARROW: return "'->'";
    case CDL_TK_PLUS: return "'+'";
    case CDL_TK_MINUS: return "'-'";
    case CDL_TK_STAR: return "'*'";
    case CDL_TK_SLASH: return "'/'";
    case CDL_TK_PERCENT: return "'%'";
    case CDL_TK_EQ: return "'=='";
    case CDL_TK_NE: return "'!='";
    case CDL_TK_LT: return "'<'";
    case CDL_TK_LE: return "'<='";
    case CDL_TK_GT: return "'>'";
    case CDL_TK_GE: return "'>='";
    case CDL_TK_AND: return "'&&'";
    case CDL_TK_OR: return "'||'";
    case CDL_TK_NOT: return "'!'";
  }
  return "?";
}
