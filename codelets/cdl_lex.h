/* codelets/cdl_lex.h: tokens of the codelet language.
 *
 * The lexer turns the whole text into tokens on demand (one token of
 * lookahead plus one peek is all the parser needs). Malformed tokens (a
 * stray character, an unterminated string, an integer too large) come back
 * as CDL_TK_ERROR with a message, so the parser reports them where they are
 * with its usual "near" wording. */
#ifndef CDL_LEX_H
#define CDL_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum cdl_tok_kind {
  CDL_TK_EOF,
  CDL_TK_ERROR,
  CDL_TK_NAME,
  CDL_TK_INT,
  CDL_TK_FLOAT,
  CDL_TK_STRING,
  /* reserved words */
  CDL_TK_CODELET, CDL_TK_ATTR, CDL_TK_LET, CDL_TK_REQUIRE, CDL_TK_LOCAL, CDL_TK_FOR,
  CDL_TK_IN, CDL_TK_ELSE, CDL_TK_INTTYPE, CDL_TK_FLOATTYPE, CDL_TK_ANY, CDL_TK_INF,
  /* punctuation */
  CDL_TK_LPAREN, CDL_TK_RPAREN, CDL_TK_LBRACKET, CDL_TK_RBRACKET, CDL_TK_LBRACE,
  CDL_TK_RBRACE, CDL_TK_COMMA, CDL_TK_COLON, CDL_TK_ASSIGN, CDL_TK_ARROW,
  CDL_TK_PLUS, CDL_TK_MINUS, CDL_TK_STAR, CDL_TK_SLASH, CDL_TK_PERCENT,
  CDL_TK_EQ, CDL_TK_NE, CDL_TK_LT, CDL_TK_LE, CDL_TK_GT, CDL_TK_GE,
  CDL_TK_AND, CDL_TK_OR, CDL_TK_NOT,
} cdl_tok_kind;

typedef struct cdl_token {
  cdl_tok_kind kind;
  const char *start; /* into the source text */
  size_t len;
  unsigned line, col;
  int64_t ival;      /* CDL_TK_INT */
  double fval;       /* CDL_TK_FLOAT */
  const char *error; /* CDL_TK_ERROR: what is wrong, static text */
} cdl_token;

typedef struct cdl_lexer {
  const char *src, *p, *end;
  unsigned line;
  const char *line_start;
} cdl_lexer;

void cdl_lex_init(cdl_lexer *lx, const char *src, size_t size);
cdl_token cdl_lex_next(cdl_lexer *lx);
/* "']'", "'codelet'", "a name", "end of file": for "expected X" messages. */
const char *cdl_tok_kind_desc(cdl_tok_kind kind);

#endif
