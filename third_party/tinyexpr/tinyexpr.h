// SPDX-License-Identifier: Zlib
/*
 * TINYEXPR - Tiny recursive descent parser and evaluation engine in C
 *
 * Copyright (c) 2015-2020 Lewis Van Winkle
 *
 * http://CodePlea.com
 *
 * This software is provided 'as-is', without any express or implied
 * warranty. In no event will the authors be held liable for any damages
 * arising from the use of this software.
 *
 * Permission is granted to anyone to use this software for any purpose,
 * including commercial applications, and to alter it and redistribute it
 * freely, subject to the following restrictions:
 *
 * 1. The origin of this software must not be misrepresented; you must not
 * claim that you wrote the original software. If you use this software
 * in a product, an acknowledgement in the product documentation would be
 * appreciated but is not required.
 * 2. Altered source versions must be plainly marked as such, and must not be
 * misrepresented as being the original software.
 * 3. This notice may not be removed or altered from any source distribution.
 */

#ifndef TINYEXPR_H
#define TINYEXPR_H


#ifdef __cplusplus
extern "C" {
#endif



typedef struct te_expr {
    int type;
    int depth; /* robosim: 1 + the deepest parameter's depth (te_compile_bounded) */
    union {double value; const double *bound; const void *function;};
    void *parameters[1];
} te_expr;


enum {
    TE_VARIABLE = 0,

    TE_FUNCTION0 = 8, TE_FUNCTION1, TE_FUNCTION2, TE_FUNCTION3,
    TE_FUNCTION4, TE_FUNCTION5, TE_FUNCTION6, TE_FUNCTION7,

    TE_CLOSURE0 = 16, TE_CLOSURE1, TE_CLOSURE2, TE_CLOSURE3,
    TE_CLOSURE4, TE_CLOSURE5, TE_CLOSURE6, TE_CLOSURE7,

    TE_FLAG_PURE = 32
};

typedef struct te_variable {
    const char *name;
    const void *address;
    int type;
    void *context;
} te_variable;



/* Parses the input expression, evaluates it, and frees it. */
/* Returns NaN on error. */
double te_interp(const char *expression, int *error);

/* Parses the input expression and binds variables. */
/* Returns NULL on error. */
te_expr *te_compile(const char *expression, const te_variable *variables, int var_count, int *error);

/* robosim: te_compile within bounds, so that neither the parser's recursion nor the
 * recursion of te_eval, te_free and the optimizer over the tree can exhaust the stack:
 * max_nesting levels of parentheses and function calls, max_nodes nodes, a tree max_depth
 * nodes deep (a chain a+b+c+... is a left-deep tree as deep as its terms). Past a bound it
 * returns NULL with *error -1 and *limit_hit the TE_LIMIT_* that was passed. te_compile
 * applies the TE_DEFAULT_* bounds. */
typedef struct te_limits {
    int max_nesting, max_nodes, max_depth;
} te_limits;
enum { TE_LIMIT_NONE, TE_LIMIT_NESTING, TE_LIMIT_NODES, TE_LIMIT_DEPTH };
#define TE_DEFAULT_MAX_NESTING 256
#define TE_DEFAULT_MAX_NODES 65536
#define TE_DEFAULT_MAX_DEPTH 1024
te_expr *te_compile_bounded(const char *expression, const te_variable *variables, int var_count,
                            const te_limits *limits, int *error, int *limit_hit);

/* Evaluates the expression. */
double te_eval(const te_expr *n);

/* Prints debugging information on the syntax tree. */
void te_print(const te_expr *n);

/* Frees the expression. */
/* This is safe to call on NULL pointers. */
void te_free(te_expr *n);


#ifdef __cplusplus
}
#endif

#endif /*TINYEXPR_H*/
