#include "rs_errors.h"

#include <stdio.h>
#include <string.h>

const char *rs_strerror(int code)
{
    switch (code) {
    case 0: return "ok";
#define RS_ERR_STR(name, num, msg) case RS_##name: return msg;
        RS_ERRNO_MAP(RS_ERR_STR)
#undef RS_ERR_STR
    default: return "unknown error";
    }
}

const char *rs_errname(int code)
{
    switch (code) {
    case 0: return "OK";
#define RS_ERR_NAME(name, num, msg) case RS_##name: return #name;
        RS_ERRNO_MAP(RS_ERR_NAME)
#undef RS_ERR_NAME
    default: return "EUNKNOWN";
    }
}

int rs_fail(rs_status_t *st, int code, const char *fmt, ...)
{
    if (st) {
        va_list ap;
        va_start(ap, fmt);
        st->code = code;
        vsnprintf(st->message, sizeof st->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

void rs_status_clear(rs_status_t *st)
{
    if (st) {
        st->code = 0;
        st->message[0] = '\0';
    }
}
