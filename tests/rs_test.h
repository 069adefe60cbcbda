/* A minimal assertion header for the C tests: each CHECK prints what failed and where, the test
 * keeps going, and rs_test_done() prints "N passed, N failed" and returns the exit status. */
#ifndef RS_TEST_H
#define RS_TEST_H

#include <math.h>
#include <stdio.h>

static int rs_test_pass, rs_test_fail;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (cond) {                                                                            \
            rs_test_pass++;                                                                    \
        } else {                                                                               \
            rs_test_fail++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

/* |a - b| <= rel * max(|a|, |b|, floor) */
#define CHECK_REL(a, b, rel, floor)                                                            \
    do {                                                                                       \
        double ca_ = (a), cb_ = (b);                                                           \
        double sc_ = fmax(fmax(fabs(ca_), fabs(cb_)), (floor));                                \
        CHECK(fabs(ca_ - cb_) <= (rel)*sc_, "%s = %.17g, %s = %.17g, rel err %.3g > %.3g", #a, \
              ca_, #b, cb_, fabs(ca_ - cb_) / sc_, (double)(rel));                             \
    } while (0)

#define CHECK_OK(rc, st) CHECK((rc) == 0, "rc %d: %s", (rc), (st).message)

static inline int rs_test_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, rs_test_pass, rs_test_fail);
    return rs_test_fail ? 1 : 0;
}

#endif
