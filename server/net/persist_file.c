/* The state dir's files: world files and server.state read and written (the layout:
 * persist.c's header comment and docs/design.md), each write atomic (temp file, fsync, rename,
 * directory fsync). */
#include "persist_file.h"
#include "rs_data.h"
#include "rs_log.h"
#include "rs_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- little-endian fields: the core's snapshot codec (rs_data.h) at fixed offsets ---------- */

void rs_pfile_put_u32(uint8_t *p, uint32_t v)
{
    rs_writer_t w = {p, 0, 4};
    rs_put_u32(&w, v);
}

void rs_pfile_put_u64(uint8_t *p, uint64_t v)
{
    rs_writer_t w = {p, 0, 8};
    rs_put_u64(&w, v);
}

uint32_t rs_pfile_get_u32(const uint8_t *p)
{
    rs_reader_t r = {p, p + 4, "", 0};
    return rs_get_u32(&r);
}

uint64_t rs_pfile_get_u64(const uint8_t *p)
{
    rs_reader_t r = {p, p + 8, "", 0};
    return rs_get_u64(&r);
}

void rs_pfile_put_f64(uint8_t *p, double v)
{
    rs_writer_t w = {p, 0, 8};
    rs_put_f64(&w, v);
}

double rs_pfile_get_f64(const uint8_t *p)
{
    rs_reader_t r = {p, p + 8, "", 0};
    return rs_get_f64(&r);
}

/* A fixed-width, zero-padded name field as a C string; 0, or -1 when it is not one (no NUL, or
 * bytes after the NUL that are not zero). */
int rs_pfile_get_name(const uint8_t *p, size_t width, char *out)
{
    size_t n = strnlen((const char *)p, width);
    if (n == width)
        return -1;
    for (size_t i = n; i < width; i++)
        if (p[i])
            return -1;
    memcpy(out, p, n + 1);
    return 0;
}

/* A token field: RS_TOKEN_LEN lowercase hex digits, or zero bytes for none. 0 or -1. */
int rs_pfile_get_token(const uint8_t *p, char out[RS_TOKEN_LEN + 1])
{
    memcpy(out, p, RS_TOKEN_LEN);
    out[RS_TOKEN_LEN] = '\0';
    size_t n = strlen(out);
    for (size_t i = 0; i < RS_TOKEN_LEN; i++)
        if (i < n ? !((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')) : p[i] != 0)
            return -1;
    return n == 0 || n == RS_TOKEN_LEN ? 0 : -1;
}

/* Grow *ptr (elements of `size` bytes, *cap of them) to hold `need`. 0 or -1. */
int rs_pfile_reserve(void *ptr, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return 0;
    void *grown = realloc(*(void **)ptr, (size_t)need * size);
    if (!grown)
        return -1;
    *(void **)ptr = grown;
    *cap = need;
    return 0;
}

/* ---- files ---------------------------------------------------------------------------------- */

/* Write `len` bytes to dir/name.tmp (created 0600), fsync'd when `sync` is set. 0 or
 * RS_EUNAVAIL (the temporary file removed). */
int rs_pfile_write_temp(const char *dir, const char *name, const uint8_t *p, size_t len, int sync,
                        rs_status_t *st)
{
    char tmp[PATH_BUF];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    /* created anew, never through a link: a leftover (a crash mid-write) is removed first */
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(tmp, flags, 0600);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, flags, 0600);
    if (fd < 0)
        return rs_fail(st, RS_EUNAVAIL, "cannot create %s: %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : ENOSPC;
            close(fd);
            unlink(tmp);
            return rs_fail(st, RS_EUNAVAIL, "cannot write %s: %s", tmp, strerror(e));
        }
        done += (size_t)n;
    }
    if (sync && fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return rs_fail(st, RS_EUNAVAIL, "cannot fsync %s: %s", tmp, strerror(e));
    }
    close(fd);
    return 0;
}

/* Rename dir/name.tmp over dir/name. 0 or RS_EUNAVAIL (the temporary file removed). */
int rs_pfile_commit_temp(const char *dir, const char *name, rs_status_t *st)
{
    char path[PATH_BUF], tmp[PATH_BUF];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return rs_fail(st, RS_EUNAVAIL, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return 0;
}

/* Write `len` bytes as dir/name atomically: a temporary file fsync'd then renamed over the old
 * one. The directory itself is fsync'd by the caller. 0 or RS_EUNAVAIL. */
int rs_pfile_write_atomic(const char *dir, const char *name, const uint8_t *p, size_t len,
                          rs_status_t *st)
{
    int rc = rs_pfile_write_temp(dir, name, p, len, 1, st);
    return rc < 0 ? rc : rs_pfile_commit_temp(dir, name, st);
}

int rs_pfile_sync_dir(const char *dir, rs_status_t *st)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return rs_fail(st, RS_EUNAVAIL, "cannot fsync the state dir %s: %s", dir, strerror(e));
    }
    close(fd);
    return 0;
}

/* The whole of dir/name in a malloc'd buffer (*len bytes), or NULL with the reason in st. */
uint8_t *rs_pfile_read_all(const char *dir, const char *name, size_t *len, rs_status_t *st)
{
    char path[PATH_BUF];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* no link followed; a FIFO opened without waiting for a writer, then refused */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        rs_fail(st, RS_EUNAVAIL, "cannot open: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > MAX_FILE_SIZE) {
        rs_fail(st, RS_EINVAL, "not a regular file of at most %u bytes", MAX_FILE_SIZE);
        close(fd);
        return NULL;
    }
    uint8_t *buf = malloc((size_t)sb.st_size + 1);
    size_t done = 0;
    while (buf && done < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + done, (size_t)sb.st_size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
    if (!buf || done != (size_t)sb.st_size) {
        rs_fail(st, RS_EUNAVAIL, buf ? "short read" : "out of memory");
        free(buf);
        return NULL;
    }
    *len = done;
    return buf;
}

/* Move a file that could not be restored out of the way (name.bad), saying why. */
void rs_pfile_set_aside(const char *dir, const char *name, const char *why)
{
    char path[PATH_BUF], bad[PATH_BUF];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(bad, sizeof bad, "%s/%s.bad", dir, name);
    if (rename(path, bad) == 0)
        rs_log(RS_LOG_ERROR, "state dir: %s cannot be restored (%s); moved aside to %s", path,
               why, bad);
    else
        rs_log(RS_LOG_ERROR, "state dir: %s cannot be restored (%s), nor moved aside: %s", path,
               why, strerror(errno));
}

/* The id in a file name "world-<id>.rsw" (or any name starting "world-<id>." when `any_suffix`),
 * or 0 when it is not one: the id is decimal digits without a leading zero, from 1 to ID_MAX. */
uint64_t rs_pfile_world_file_id(const char *name, int any_suffix)
{
    if (strncmp(name, "world-", 6) != 0 || name[6] < '1' || name[6] > '9')
        return 0;
    uint64_t id = 0;
    const char *c = name + 6;
    for (; *c >= '0' && *c <= '9'; c++) {
        id = id * 10 + (uint64_t)(*c - '0');
        if (id > ID_MAX)
            return 0;
    }
    if (*c != '.' || (!any_suffix && strcmp(c, ".rsw") != 0))
        return 0;
    return id;
}

/* ---- world files ---------------------------------------------------------------------------- */

int rs_persist_parse_world(const uint8_t *buf, size_t len, rs_persisted_world_t *out,
                                rs_status_t *st)
{
    if (len < WORLD_HEADER_V1 + 8 || memcmp(buf, WORLD_MAGIC, 8) != 0)
        return rs_fail(st, RS_EINVAL, "not a robosim world file (%zu bytes)", len);
    uint32_t version = rs_pfile_get_u32(buf + 8);
    if (version != 1 && version != FILE_VERSION)
        return rs_fail(st, RS_EPRECOND, "world file version %u, this server reads 1 to %d",
                       version, FILE_VERSION);
    size_t header = version == 1 ? WORLD_HEADER_V1 : WORLD_HEADER;
    if (len < header + 8)
        return rs_fail(st, RS_EINVAL, "not a robosim world file (%zu bytes)", len);
    if (rs_snapshot_checksum(buf, len - 8) != rs_pfile_get_u64(buf + len - 8))
        return rs_fail(st, RS_EINVAL, "checksum mismatch (the file is damaged)");
    const uint8_t *p = buf + 16;
    memset(out, 0, sizeof *out);
    out->id = rs_pfile_get_u64(p);
    p += 8;
    if (rs_pfile_get_token(p, out->token) < 0 || rs_pfile_get_token(p + RS_TOKEN_LEN, out->prev_token) < 0)
        return rs_fail(st, RS_EINVAL, "a controller token is not hex digits");
    p += 2 * RS_TOKEN_LEN;
    out->lease_remaining = rs_pfile_get_f64(p);
    p += 8;
    if (rs_pfile_get_name(p, NAME_LEN, out->preset) < 0 || rs_pfile_get_name(p + NAME_LEN, NAME_LEN, out->task) < 0)
        return rs_fail(st, RS_EINVAL, "preset or task name is not a string");
    p += 2 * NAME_LEN;
    if (version == 1) {
        snprintf(out->owner, sizeof out->owner, UNKNOWN_OWNER);
    } else {
        if (rs_pfile_get_name(p, OWNER_LEN, out->owner) < 0)
            return rs_fail(st, RS_EINVAL, "the owner field is not a string");
        p += OWNER_LEN;
    }
    uint64_t n = rs_pfile_get_u64(p);
    p += 8;
    if (n != len - header - 8)
        return rs_fail(st, RS_EINVAL, "snapshot length %" PRIu64 " does not fit the file", n);
    if (out->id == 0 || out->id > ID_MAX || strlen(out->token) != RS_TOKEN_LEN ||
        !(fabs(out->lease_remaining) <= 1e12))
        return rs_fail(st, RS_EINVAL, "world id, token or lease out of range");
    out->snapshot = p;
    out->snapshot_len = (size_t)n;
    return 0;
}
