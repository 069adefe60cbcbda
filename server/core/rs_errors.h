/* robosim error codes: one table, negative codes, one strerror (libuv style).
 *
 * Core functions return 0 on success or a negative RS_E* code. The wire error code
 * (robosim.v1.ErrorCode) is the same number negated, so a test can check the two agree. */
#ifndef RS_ERRORS_H
#define RS_ERRORS_H

#include <stdarg.h>
#include <stddef.h>

#define RS_ERRNO_MAP(X)                                                                  \
    X(EINVAL, 1, "invalid argument")                                                       \
    X(ENOTFOUND, 2, "not found")                                                           \
    X(EPRECOND, 3, "failed precondition")                                                  \
    X(EPERM, 4, "permission denied")                                                       \
    X(EEXHAUSTED, 5, "resource exhausted")                                                 \
    X(EINTERNAL, 6, "internal error")                                                      \
    X(EUNIMPL, 7, "unimplemented")                                                         \
    X(EMALFORMED, 8, "malformed message")                                                  \
    X(EVERSION, 9, "protocol version mismatch")                                            \
    X(ERANGE, 10, "out of range")                                                          \
    X(ESIMFAIL, 11, "simulation failed")                                                   \
    X(EDEADLINE, 12, "compute budget exceeded")                                            \
    X(EUNAUTH, 13, "not authenticated")                                                    \
    X(EUNAVAIL, 14, "server unavailable")

enum {
#define RS_ERR_ENUM(name, num, msg) RS_##name = -(num),
    RS_ERRNO_MAP(RS_ERR_ENUM)
#undef RS_ERR_ENUM
};

/* The code's short description ("invalid argument"); "unknown error" for an unknown code. */
const char *rs_strerror(int code);

/* The code's symbolic name ("EINVAL"), for logs. */
const char *rs_errname(int code);

/* A status with a message a person can act on. Functions that can fail for a reason the caller
 * must be told take an optional rs_status_t *; NULL is accepted everywhere. */
typedef struct rs_status {
    int code;           /* 0 or a negative RS_E* code */
    char message[256];  /* empty when code is 0 */
} rs_status_t;

/* Record `code` and a printf-style message in `st` (if not NULL); return `code`. */
int rs_fail(rs_status_t *st, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clear `st` to success. */
void rs_status_clear(rs_status_t *st);

/* Append one item, formatted printf-style, to the ", "-separated list in buf (len bytes, a
 * NUL-terminated string; "" for an empty list), for messages that name the choices there are
 * ("unknown preset 'x' (presets: finger, serial_arm, ...)"). What does not fit is cut off and
 * buf stays terminated. Returns buf. */
char *rs_join(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
