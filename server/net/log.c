#include "rs_log.h"

#include "rs_errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum rs_log_level current = RS_LOG_INFO;
static const char *const names[] = {"error", "warn", "info", "debug"};

void rs_log_set_level(enum rs_log_level level) { current = level; }

int rs_log_enabled(enum rs_log_level level) { return level <= current; }

int rs_log_parse_level(const char *name, enum rs_log_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (enum rs_log_level)i;
            return 0;
        }
    return RS_EINVAL;
}

void rs_log(enum rs_log_level level, const char *fmt, ...)
{
    if (level > current)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03ldZ robosim-server[%d] %-5s %s\n", stamp, (long)(tv.tv_usec / 1000),
            (int)getpid(), names[level], msg);
}
