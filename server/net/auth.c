/* Controller tokens and leases.
 *
 * Every world has one controller: whoever holds its token (128 random bits, 32 hex digits).
 * Requests that change a world (the dispatch table's `mutates` rows) must carry it; each one
 * accepted renews the controller's lease. A world whose lease has lapsed can be claimed: the
 * claimer gets a new token and the old one stops working. */
#include "rs_log.h"
#include "server_internal.h"

#include <arpa/inet.h>
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
    w->sched.last_active = rs_monotonic();
    w->ckpt.clean = 0;
    return 0;
}

int rs_auth_check(rs_server_t *s, world_slot_t *w, const char *token, const char *opname,
                  rs_status_t *st)
{
    if (token && token_equal(w->token, token)) {
        double now = s->request_time > 0 ? s->request_time : rs_monotonic();
        w->lease_until = now + s->cfg.lease_seconds;
        w->sched.last_active = now; /* --world-ttl counts from here */
        w->ckpt.clean = 0;               /* the lease (and what the request changes) */
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

/* ---- who sent a request ---- */

/* The world quota's key of a plaintext peer from ZeroMQ's "Peer-Address" (empty: none known,
 * the caller keeps its connection id). IPv4 by address; IPv6 by its /64 (one host's share
 * of addresses); every loopback address is one key (a local process picks any 127.x source);
 * ipc:// by the peer's user id ("<host>:<uid>:<gid>:<pid>" on Linux). */
static void address_key(const char *addr, char *key, size_t cap)
{
    key[0] = '\0';
    if (!addr || !addr[0])
        return;
    const char *v4 = strncmp(addr, "::ffff:", 7) == 0 && strchr(addr + 7, '.') ? addr + 7 : addr;
    if (strncmp(v4, "127.", 4) == 0 || strcmp(addr, "::1") == 0) {
        snprintf(key, cap, "ip:loopback");
        return;
    }
    unsigned char a6[16];
    char v6[64];
    snprintf(v6, sizeof v6, "%.*s", (int)strcspn(addr, "%"), addr); /* without a zone */
    if (strchr(v4, '.') && !strchr(v4, ':')) {
        snprintf(key, cap, "ip:%s", v4);
    } else if (inet_pton(AF_INET6, v6, a6) == 1) {
        snprintf(key, cap, "ip:%x:%x:%x:%x::/64", a6[0] << 8 | a6[1], a6[2] << 8 | a6[3],
                 a6[4] << 8 | a6[5], a6[6] << 8 | a6[7]);
    } else {
        /* ipc: the uid, the third field from the end */
        const char *f[3] = {NULL, NULL, NULL};
        for (const char *c = addr; *c; c++)
            if (*c == ':')
                f[0] = f[1], f[1] = f[2], f[2] = c;
        if (f[0] && f[1] && f[1] > f[0] + 1)
            snprintf(key, cap, "uid:%.*s", (int)(f[1] - f[0] - 1), f[0] + 1);
    }
}

/* Who sent a request: the ZAP handler's User-Id ("<role>:<Z85 key>") when the socket runs
 * CURVE, else the connection's routing id (the envelope's first frame) and its address. */
void rs_caller_of(zmq_msg_t *routing, zmq_msg_t *payload, rs_caller_t *c)
{
    const char *uid = zmq_msg_gets(payload, "User-Id");
    const char *colon = uid ? strchr(uid, ':') : NULL;
    c->observer_only = 0;
    if (colon) {
        c->observer_only = strncmp(uid, "observer:", 9) == 0;
        snprintf(c->id, sizeof c->id, "curve:%s", colon + 1);
        memcpy(c->key, c->id, sizeof c->key);
        return;
    }
    /* hex by table: this runs for every request */
    static const char hex[] = "0123456789abcdef";
    const uint8_t *r = zmq_msg_data(routing);
    size_t n = zmq_msg_size(routing), used = 5;
    memcpy(c->id, "conn:", 5);
    for (size_t i = 0; i < n && used + 2 < sizeof c->id; i++) {
        c->id[used++] = hex[r[i] >> 4];
        c->id[used++] = hex[r[i] & 15];
    }
    c->id[used] = '\0';
    address_key(zmq_msg_gets(payload, "Peer-Address"), c->key, sizeof c->key);
    if (!c->key[0])
        memcpy(c->key, c->id, sizeof c->key);
}
