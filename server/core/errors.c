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

char *rs_join(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || len == 0)
        return buf;
    size_t used = strnlen(buf, len - 1);
    buf[used] = '\0';
    if (used > 0 && used < len - 1)
        used += (size_t)snprintf(buf + used, len - used, ", ");
    if (used < len - 1) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf + used, len - used, fmt, ap);
        va_end(ap);
    }
    return buf;
}

void rs_status_clear(rs_status_t *st)
{
    if (st) {
        st->code = 0;
        st->message[0] = '\0';
    }
}
