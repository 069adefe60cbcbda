/* The front of a server with --shards N: N shards, each a whole server loop (loop.c: its
 * worlds, scheduler, watchdog and stepper) on its own thread with its own listening socket: N
 * TCP sockets bound to the one port with SO_REUSEPORT, so the kernel spreads the clients'
 * connections over the shards and no thread sees every request (shared nothing, as Seastar
 * does it). How a shard routes a request to another is shards.c's. The front itself holds the
 * observer stream's public socket, CURVE, the state dir's lock and id record, and what the
 * shards share (shard_group.h: the census of worlds, the peers' endpoints); its thread
 * forwards the shards' stream frames to the public XPUB and subscriptions back (XSUB), so each
 * shard sees who watches. */
#include "front.h"
#include "loop.h"
#include "rs_log.h"
#include "stepper.h"
#include "worlds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define LISTEN_BACKLOG 128

struct rs_front {
    rs_shard_group_t group;   /* what the shards share (they point at it) */
    struct rs_census census;  /* group.census */
    rs_server_t **shard;
    pthread_t *thread;
    int *started;
    int *fds;                 /* each shard's listening socket until its ROUTER takes it */
    int *direct_fds;          /* ... and its own port's (--shard-ports), or -1 */
    uint32_t *ports;          /* each shard's own port (0: none), for HelloReply.shard_ports */
    char (*endpoints)[3][96]; /* each shard's bind (the public one), stream and own-port
                                 endpoints */
    void *xsub;               /* the front's XSUB to every shard's stream, or NULL */
    rs_stop_flag_t *stop;
    atomic_int running;
};

/* ---- running: starts the shards, forwards the stream ---------------------------------------- */

typedef struct shard_arg {
    rs_server_t *front;
    int k;
} shard_arg_t;

static void *shard_main(void *arg)
{
    shard_arg_t *a = arg;
    struct rs_front *f = a->front->shards;
    rs_loop_run(f->shard[a->k], f->stop);
    atomic_fetch_sub(&f->running, 1);
    free(a);
    return NULL;
}

/* Forward up to 256 messages waiting on `from` to `to`, frame by frame. */
static void pump(void *from, void *to)
{
    for (int i = 0; i < 256; i++) {
        int more = 1, first = 1;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, from, first ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&m);
                return;
            }
            first = 0;
            more = zmq_msg_more(&m);
            if (zmq_msg_send(&m, to, more ? ZMQ_SNDMORE : 0) < 0)
                zmq_msg_close(&m);
        }
    }
}

int rs_front_run(rs_server_t *s, rs_stop_flag_t *stop)
{
    struct rs_front *f = s->shards;
    int n = f->group.n;
    f->stop = stop;
    atomic_store(&f->running, n);
    atomic_store(&f->group.draining, 0);
    for (int k = 0; k < n; k++) {
        shard_arg_t *a = malloc(sizeof *a);
        if (a)
            *a = (shard_arg_t){s, k};
        if (!a || pthread_create(&f->thread[k], NULL, shard_main, a) != 0) {
            free(a);
            atomic_fetch_sub(&f->running, n - k);
            atomic_fetch_add(&f->group.draining, n - k); /* these never pass anything on */
            rs_log(RS_LOG_ERROR, "cannot start shard %d's thread", k);
            atomic_store(stop, 1); /* the others stop too */
            break;
        }
        f->started[k] = 1;
    }
    rs_log(RS_LOG_INFO, "serving protocol %d.%d on %s with %d shards", RS_PROTOCOL_MAJOR,
           RS_PROTOCOL_MINOR, f->endpoints[0][0], n);
    for (int k = 0; k < n && f->ports[0]; k++)
        rs_log(RS_LOG_INFO, "shard %d's own port: %s", k, f->endpoints[k][2]);
    /* the stream: the shards' frames out, the subscriptions in; else only wait */
    zmq_pollitem_t items[2] = {{f->xsub, 0, ZMQ_POLLIN, 0}, {s->stream.xpub, 0, ZMQ_POLLIN, 0}};
    while (!atomic_load(stop) || atomic_load(&f->running) > 0) {
        if (!f->xsub) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        if (zmq_poll(items, 2, 20) < 0 && zmq_errno() != EINTR)
            break;
        if (items[0].revents & ZMQ_POLLIN)
            pump(f->xsub, s->stream.xpub);
        if (items[1].revents & ZMQ_POLLIN)
            pump(s->stream.xpub, f->xsub);
    }
    for (int k = 0; k < n; k++) {
        if (f->started[k])
            pthread_join(f->thread[k], NULL);
        f->started[k] = 0;
    }
    f->stop = NULL;
    return 0;
}

/* ---- making and ending them ------------------------------------------------------------- */

/* A listening TCP socket on `ai` (non-blocking; SO_REUSEPORT when `shared`), its port in *port;
 * -1 (errno) on failure. */
static int listen_on(const struct addrinfo *ai, int shared, int *port)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol), on = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        (shared && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    *port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                           : ((struct sockaddr_in *)&sa)->sin_port);
    return fd;
}

static void set_port(struct addrinfo *ai, int port)
{
    if (ai->ai_family == AF_INET6)
        ((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ai->ai_addr)->sin_port = htons((uint16_t)port);
}

/* N listening sockets on `bind`'s address and port (tcp://HOST:PORT, PORT may be *), each with
 * SO_REUSEPORT; the endpoint with the port bound written to `resolved`. Then, unless
 * shard_ports < 0, each shard's own port on the same host (shard_ports + k, or a free one). */
static int listen_all(struct rs_front *f, const char *endpoint, int shard_ports, char *resolved,
                      size_t cap, rs_status_t *st)
{
    char host[256], port[16];
    const char *hp = strncmp(endpoint, "tcp://", 6) == 0 ? endpoint + 6 : NULL;
    const char *colon = hp ? strrchr(hp, ':') : NULL;
    if (!hp || !colon || (size_t)(colon - hp) >= sizeof host || strlen(colon + 1) >= sizeof port)
        return rs_fail(st, RS_EINVAL,
                       "--shards needs a tcp://HOST:PORT endpoint to listen on (got '%s'): each "
                       "shard listens on that port itself", endpoint);
    snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
    snprintf(port, sizeof port, "%s", colon + 1);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    if (!strcmp(port, "*"))
        snprintf(port, sizeof port, "0");
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(!strcmp(host, "*") ? NULL : host, port, &hints, &ai);
    if (gai != 0 || !ai)
        return rs_fail(st, RS_EINVAL, "--shards: cannot resolve %s: %s", endpoint, gai_strerror(gai));
    int rc = 0;
    for (int k = 0; k < f->group.n && rc == 0; k++) {
        int bound = 0;
        if ((f->fds[k] = listen_on(ai, 1, &bound)) < 0) {
            rc = rs_fail(st, RS_EPRECOND, "cannot bind %s: %s", endpoint, strerror(errno));
            break;
        }
        if (k == 0) {
            /* the others take the port the first was given */
            set_port(ai, bound);
            snprintf(resolved, cap, "tcp://%.*s:%d", (int)(colon - hp), hp, bound);
        }
    }
    /* each shard's own port: where clients send its worlds' requests (HelloReply.shard_ports) */
    for (int k = 0; k < f->group.n && rc == 0 && shard_ports >= 0; k++) {
        int bound = 0;
        set_port(ai, shard_ports > 0 ? shard_ports + k : 0);
        if (shard_ports > 0 && shard_ports + k > 65535) {
            rc = rs_fail(st, RS_EINVAL, "--shard-ports %d: shard %d's port %d is past 65535",
                         shard_ports, k, shard_ports + k);
            break;
        }
        if ((f->direct_fds[k] = listen_on(ai, 0, &bound)) < 0) {
            rc = rs_fail(st, RS_EPRECOND, "cannot bind shard %d's own port %d on %.*s: %s%s", k,
                         shard_ports > 0 ? shard_ports + k : 0, (int)(colon - hp), hp,
                         strerror(errno),
                         shard_ports > 0 ? " (pick another --shard-ports base, or auto for "
                                           "free ports, or off)"
                                         : "");
            break;
        }
        f->ports[k] = (uint32_t)bound;
        snprintf(f->endpoints[k][2], sizeof f->endpoints[k][2], "tcp://%.*s:%d",
                 (int)(colon - hp), hp, bound);
    }
    freeaddrinfo(ai);
    return rc;
}

/* Make the cfg->shards shards of front `s` (its stream bound, no request socket; cfg: the
 * server's configuration, the shards' but for their sockets). 0 or a negative code (st);
 * close_shards undoes it. */
static int open_shards(rs_server_t *s, const rs_server_config_t *server_cfg, rs_status_t *st)
{
    int n = server_cfg->shards;
    struct rs_front *f = calloc(1, sizeof *f);
    if (!f)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    s->shards = f;
    f->group.n = n;
    if (n > RS_MAX_SHARDS)
        return rs_fail(st, RS_EINVAL, "--shards %d: at most %d", n, RS_MAX_SHARDS);
    rs_census_init(&f->census);
    f->group.census = &f->census;
    if (rs_token_generate(f->group.peer_key, st) < 0)
        return st->code;
    if (!(f->shard = calloc((size_t)n, sizeof *f->shard)) ||
        !(f->thread = calloc((size_t)n, sizeof *f->thread)) ||
        !(f->started = calloc((size_t)n, sizeof *f->started)) ||
        !(f->fds = calloc((size_t)n, sizeof *f->fds)) ||
        !(f->direct_fds = calloc((size_t)n, sizeof *f->direct_fds)) ||
        !(f->ports = calloc((size_t)n, sizeof *f->ports)) ||
        !(f->endpoints = calloc((size_t)n, sizeof *f->endpoints)) ||
        !(f->group.peer_endpoints = calloc((size_t)n, sizeof *f->group.peer_endpoints)) ||
        !(f->group.outstanding = calloc((size_t)n, sizeof *f->group.outstanding)))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    for (int k = 0; k < n; k++)
        f->fds[k] = f->direct_fds[k] = -1;
    if (listen_all(f, s->cfg.bind, server_cfg->shard_ports, f->endpoints[0][0],
                   sizeof f->endpoints[0][0], st) < 0)
        return st->code;
    if (s->stream.xpub) {
        f->xsub = zmq_socket(s->zctx, ZMQ_XSUB);
        int linger = 0;
        if (!f->xsub || zmq_setsockopt(f->xsub, ZMQ_LINGER, &linger, sizeof linger) != 0)
            return rs_fail(st, RS_EINTERNAL, "cannot make the stream's forwarding socket");
    }
    for (int k = 0; k < n; k++) {
        memcpy(f->endpoints[k][0], f->endpoints[0][0], sizeof f->endpoints[0][0]);
        snprintf(f->group.peer_endpoints[k], 96, "inproc://robosim-peer-%p-%d", (void *)s, k);
        snprintf(f->endpoints[k][1], 96, "inproc://robosim-stream-%p-%d", (void *)s, k);
    }
    /* one crew of helpers for every shard's pool (and one for their steppers'): a batch on any
     * shard can still use every core, and the process has threads - 1 helpers of each kind,
     * not shards x (threads - 1) */
    if (server_cfg->threads > 1 &&
        (!(f->group.crew = rs_crew_new(server_cfg->threads - 1, 0, st)) ||
         !(f->group.off_crew = rs_crew_new(server_cfg->threads - 1, RS_STEPPER_NICE, st))))
        return st->code;
    for (int k = 0; k < n; k++) {
        rs_server_config_t cfg = *server_cfg;
        cfg.bind = f->endpoints[k][0];
        cfg.shards = 1;
        cfg.default_preset = k == 0 ? server_cfg->default_preset : NULL;
        cfg.stream_endpoint = s->stream.xpub ? f->endpoints[k][1] : NULL;
        cfg.stream_explicit = 1;
        cfg.history_bytes = server_cfg->history_bytes / (size_t)n; /* the server's bound, shared */
        memcpy(cfg.snapshot_key, s->snapshot_key, sizeof cfg.snapshot_key); /* one key: a
                                           snapshot of one shard's world forks on another */
        cfg.snapshot_key_set = 1;
        cfg.snapshot_key_file = NULL;
        rs_shard_place_t place = {s, &f->group, k, &f->fds[k], &f->direct_fds[k],
                                  f->endpoints[k][2]};
        if (!(f->shard[k] = rs_loop_new(&cfg, &place, st)))
            return st->code ? st->code : RS_EINTERNAL;
        f->shard[k]->shard_ports = f->ports;
        f->shard[k]->nshard_ports = f->ports[0] ? (size_t)n : 0;
        snprintf(f->shard[k]->stream_endpoint, sizeof f->shard[k]->stream_endpoint, "%s",
                 s->stream_endpoint); /* what Hello tells clients: the public one */
        if (f->xsub && zmq_connect(f->xsub, f->endpoints[k][1]) != 0)
            return rs_fail(st, RS_EINTERNAL, "cannot forward shard %d's stream: %s", k,
                           zmq_strerror(zmq_errno()));
    }
    return 0;
}

static void close_shards(rs_server_t *s)
{
    struct rs_front *f = s->shards;
    if (!f)
        return;
    int n = f->group.n;
    if (f->xsub)
        zmq_close(f->xsub);
    for (int k = 0; k < n && f->shard; k++)
        rs_loop_destroy(&f->shard[k]); /* its sockets close; the context is the front's */
    rs_crew_destroy(&f->group.crew); /* after the shards' pools on them */
    rs_crew_destroy(&f->group.off_crew);
    for (int k = 0; k < n && f->fds; k++)
        if (f->fds[k] >= 0)
            close(f->fds[k]); /* never taken by a shard */
    for (int k = 0; k < n && f->direct_fds; k++)
        if (f->direct_fds[k] >= 0)
            close(f->direct_fds[k]);
    free(f->direct_fds);
    free(f->ports);
    free(f->shard);
    free(f->thread);
    free(f->started);
    free(f->fds);
    free(f->endpoints);
    free(f->group.peer_endpoints);
    free(f->group.outstanding);
    rs_census_free(&f->census);
    free(f);
    s->shards = NULL;
}

rs_server_t *rs_front_new(const rs_server_config_t *cfg, rs_status_t *st)
{
    rs_server_config_t fc = *cfg;
    fc.default_preset = NULL;
    fc.threads = 1;
    rs_server_t *s = rs_loop_new(&fc, NULL, st);
    if (s && open_shards(s, cfg, st) < 0)
        rs_front_destroy(&s);
    return s;
}

void rs_front_destroy(rs_server_t **ps)
{
    if (!*ps)
        return;
    close_shards(*ps); /* the shards first: their sockets are in the front's context */
    rs_loop_destroy(ps);
}
