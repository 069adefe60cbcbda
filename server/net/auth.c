/* Controller tokens and leases.
 *
 * Every world has one controller: whoever holds its token (128 random bits, 32 hex digits).
 * Requests that change a world (the dispatch table's `mutates` rows) must carry it; each one
 * accepted renews the controller's lease. A world whose lease has lapsed can be claimed: the
 * claimer gets a new token and the old one stops working. */
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

double rs_monotonic(void)
{
    return rs_clock(); /* the core's monotonic clock: one time base for leases and steps */
}

double rs_wall_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n random bytes from the kernel: getrandom(), else /dev/urandom. */
static int random_bytes(unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0 && errno != EINTR)
            break;
        if (r > 0)
            got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : -1;
}

int rs_token_generate(char out[RS_TOKEN_LEN + 1], rs_status_t *st)
{
    unsigned char raw[RS_TOKEN_LEN / 2];
    if (random_bytes(raw, sizeof raw) < 0)
        return rs_fail(st, RS_EINTERNAL, "cannot read random bytes for a controller token: %s",
                       strerror(errno));
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[RS_TOKEN_LEN] = '\0';
    return 0;
}

/* Whether token `given` equals `want` (a full token), in time independent of where they
 * differ. */
static int token_equal(const char *want, const char *given)
{
    size_t n = strlen(given);
    unsigned diff = n != RS_TOKEN_LEN;
    for (size_t i = 0; i < RS_TOKEN_LEN; i++)
        diff |= (unsigned)(unsigned char)want[i] ^ (unsigned char)(i < n ? given[i] : 0);
    return diff == 0 && want[0] != '\0';
}

double rs_lease_remaining(const rs_server_t *s, const world_slot_t *w)
{
    return w->lease_until - rs_monotonic();
}

int rs_auth_grant(rs_server_t *s, world_slot_t *w, rs_status_t *st)
{
    char fresh[RS_TOKEN_LEN + 1];
    int rc = rs_token_generate(fresh, st);
    if (rc < 0)
        return rc;
    memcpy(w->prev_token, w->token, sizeof w->token);
    memcpy(w->token, fresh, sizeof fresh);
    w->lease_until = rs_monotonic() + s->cfg.lease_seconds;
    w->last_active = rs_monotonic();
    w->ckpt_clean = 0;
    return 0;
}

int rs_auth_check(rs_server_t *s, world_slot_t *w, const char *token, const char *opname,
                  rs_status_t *st)
{
    if (token && token_equal(w->token, token)) {
        w->lease_until = rs_monotonic() + s->cfg.lease_seconds;
        w->last_active = rs_monotonic(); /* --world-ttl counts from here */
        w->ckpt_clean = 0;               /* the lease (and what the request changes) */
        return 0;
    }
    unsigned long long id = (unsigned long long)w->id;
    if (!token || !token[0])
        return rs_fail(st, RS_EPERM,
                       "%s changes world %llu and needs its controller token in Request.token: "
                       "the token is missing (the client that created, forked or claimed the "
                       "world holds it; anyone may read the world without one)",
                       opname, id);
    if (w->prev_token[0] && token_equal(w->prev_token, token))
        return rs_fail(st, RS_EPERM,
                       "%s on world %llu: the controller token has expired (its lease of %g s "
                       "lapsed and another client claimed the world); Claim it again when its "
                       "lease lapses",
                       opname, id, s->cfg.lease_seconds);
    return rs_fail(st, RS_EPERM,
                   "%s on world %llu: the controller token is wrong (not the token of this "
                   "world; each world has its own, from CreateWorld, ForkWorld or Claim)",
                   opname, id);
}
