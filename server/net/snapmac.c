/* Snapshot authentication: a snapshot leaving the server (GetState{snapshot}) carries a keyed
 * MAC (libsodium's crypto_auth, HMAC-SHA512-256) after the core's bytes; SetState and
 * ForkWorld{snapshot} verify it before the core reads anything, so a snapshot the server did
 * not make (forged, edited, or from a server with another key) changes nothing. The core stays
 * free of libsodium: it writes and reads the bytes between. */
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(RS_SNAPSHOT_KEY_BYTES == crypto_auth_KEYBYTES, "snapshot key size");
_Static_assert(RS_SNAPSHOT_MAC_BYTES == crypto_auth_BYTES, "snapshot MAC size");

/* 32 raw bytes, or 64 hex digits (and an optional newline), from `path`, readable by its owner
 * only. */
static int load_key(const char *path, unsigned char key[RS_SNAPSHOT_KEY_BYTES], rs_status_t *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rs_fail(st, RS_EPRECOND, "--snapshot-key-file %s: %s", path, strerror(errno));
    struct stat sb = {0};
    unsigned char buf[2 * RS_SNAPSHOT_KEY_BYTES + 3];
    ssize_t n = -1;
    if (fstat(fd, &sb) == 0 && !(sb.st_mode & 077))
        n = read(fd, buf, sizeof buf);
    close(fd);
    if (sb.st_mode & 077)
        return rs_fail(st, RS_EPRECOND,
                       "--snapshot-key-file %s can be read by others (mode %03o): whoever reads "
                       "it can forge snapshots; chmod 600 it",
                       path, (unsigned)(sb.st_mode & 0777));
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r') && n != RS_SNAPSHOT_KEY_BYTES)
        n--;
    size_t bin_len = 0;
    if (n == RS_SNAPSHOT_KEY_BYTES) {
        memcpy(key, buf, RS_SNAPSHOT_KEY_BYTES);
    } else if (n != 2 * RS_SNAPSHOT_KEY_BYTES ||
               sodium_hex2bin(key, RS_SNAPSHOT_KEY_BYTES, (const char *)buf, (size_t)n, NULL,
                              &bin_len, NULL) != 0 ||
               bin_len != RS_SNAPSHOT_KEY_BYTES) {
        sodium_memzero(buf, sizeof buf);
        return rs_fail(st, RS_EPRECOND,
                       "--snapshot-key-file %s holds %zd bytes; it must hold %d random bytes or "
                       "%d hex digits (make one with: head -c %d /dev/urandom > FILE; chmod 600 "
                       "FILE)",
                       path, n, RS_SNAPSHOT_KEY_BYTES, 2 * RS_SNAPSHOT_KEY_BYTES,
                       RS_SNAPSHOT_KEY_BYTES);
    }
    sodium_memzero(buf, sizeof buf);
    return 0;
}

int rs_snapmac_init(rs_server_t *s, rs_status_t *st)
{
    if (sodium_init() < 0)
        return rs_fail(st, RS_EINTERNAL, "libsodium failed to initialise");
    if (s->cfg.snapshot_key_set) {
        memcpy(s->snapshot_key, s->cfg.snapshot_key, RS_SNAPSHOT_KEY_BYTES);
        return 0;
    }
    if (s->cfg.snapshot_key_file)
        return load_key(s->cfg.snapshot_key_file, s->snapshot_key, st);
    crypto_auth_keygen(s->snapshot_key); /* this process only: its snapshots restore here */
    return 0;
}

void rs_snapmac_sign(const rs_server_t *s, uint8_t *buf, size_t len)
{
    crypto_auth(buf + len, buf, len, s->snapshot_key);
}

int rs_snapmac_verify(const rs_server_t *s, const uint8_t *buf, size_t len, size_t *core_len,
                      rs_status_t *st)
{
    if (len < RS_SNAPSHOT_MAC_BYTES ||
        crypto_auth_verify(buf + len - RS_SNAPSHOT_MAC_BYTES, buf, len - RS_SNAPSHOT_MAC_BYTES,
                           s->snapshot_key) != 0)
        return rs_fail(st, RS_EUNAUTH,
                       "snapshot not authenticated by this server's key (changed after "
                       "GetState made it, or made by a server with another key): pass "
                       "State.snapshot unchanged, or give the servers one --snapshot-key-file");
    *core_len = len - RS_SNAPSHOT_MAC_BYTES;
    return 0;
}
