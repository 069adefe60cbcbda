/* Levelled logging to stderr: "2026-11-21T19:40:01.123Z robosim-server[pid] LEVEL message". */
#ifndef RS_LOG_H
#define RS_LOG_H

enum rs_log_level { RS_LOG_ERROR, RS_LOG_WARN, RS_LOG_INFO, RS_LOG_DEBUG };

/* Set the most verbose level printed. */
void rs_log_set_level(enum rs_log_level level);

/* Parse "error", "warn", "info" or "debug"; returns 0 or RS_EINVAL. */
int rs_log_parse_level(const char *name, enum rs_log_level *out);

/* Whether a message at `level` would be printed (to skip building expensive ones). */
int rs_log_enabled(enum rs_log_level level);

void rs_log(enum rs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
