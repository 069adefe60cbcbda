/* The bounds on the languages a client sends: task documents with their expressions, motion
 * specifications. Every recursive parser and evaluator that reads client input is bounded by
 * one of these, so no document can exhaust the stack or hold the server; a document past one is
 * refused with an error that names the limit and its value. docs/limits.md gives each its
 * reason. */
#ifndef RS_LIMITS_H
#define RS_LIMITS_H

/* One expression of a task document (TinyExpr, compiled once, evaluated per control step). */
#define RS_EXPR_MAX_SOURCE 1024 /* characters */
#define RS_EXPR_MAX_NESTING 32  /* parentheses and function calls inside one another */
#define RS_EXPR_MAX_NODES 512   /* nodes of its compiled tree */
#define RS_EXPR_MAX_DEPTH 128   /* depth of that tree (a + b + c + ... is as deep as its terms) */

/* A task document. */
#define RS_TASK_DOC_MAX_SOURCE (1u << 16) /* bytes */
#define RS_TASK_DOC_MAX_NESTING 16        /* JSON levels of objects and arrays */
/* The expression-node evaluations one episode start may need at worst: every "until" failing
 * all its tries, each try recomputing the quantities it redraws (an argmin over the longest
 * list a parameter can hold); about a few milliseconds. */
#define RS_TASK_DOC_MAX_RESET_WORK 2000000L
/* The expression-node evaluations one control step may need at worst (the quantities, the
 * reward, success, termination; the observation once a Step). */
#define RS_TASK_DOC_MAX_STEP_WORK 200000L

/* A motion specification. */
#define RS_MOTION_SPEC_MAX_SOURCE (1u << 20) /* bytes */
#define RS_MOTION_SPEC_MAX_NESTING 32        /* JSON levels */
#define RS_MOTION_SPEC_MAX_ENTITIES 256      /* also bounds its dependency order's recursion */

#endif
