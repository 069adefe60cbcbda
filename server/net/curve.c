/* CurveZMQ: the request socket and the observer stream as CURVE servers, with a ZAP handler
 * that admits only the keys the allow-list names (docs/design.md, "Rationale and measurements"). */
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN "robosim"
#define KEY_Z85_LEN 40 /* a 32-byte CURVE key in Z85 */

typedef struct authorized_key {
    uint8_t key[32];
    int observer_only;
} authorized_key_t;

struct rs_curve {
    uint8_t secret[32];
    char public_z85[KEY_Z85_LEN + 1];
    authorized_key_t *keys;
    int nkeys;
    void *zap;          /* the handler's REP socket, owned by its thread once it runs */
    double logged_at;   /* when the handler last logged a refusal (its thread only) ... */
    unsigned quiet;     /* ... and the refusals it did not log since */
    pthread_t thread;
    int thread_started;
};

/* ---- loopback ---------------------------------------------------------------------------- */

int rs_endpoint_is_loopback(const char *ep)
{
    if (!strncmp(ep, "ipc://", 6) || !strncmp(ep, "inproc://", 9))
        return 1;
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0; /* ws://, udp://, ...: treated as the network */
    const char *host = ep + 6, *end = strrchr(host, ':');
    size_t n = end ? (size_t)(end - host) : strlen(host);
    if (n == 5 && !strncmp(host, "[::1]", 5))
        return 1;
    if (n == 9 && !strncmp(host, "localhost", 9))
        return 1;
    /* 127.0.0.0/8: "127." then digits and dots only */
    if (n < 5 || strncmp(host, "127.", 4) != 0)
        return 0;
    for (size_t i = 4; i < n; i++)
        if (!((host[i] >= '0' && host[i] <= '9') || host[i] == '.'))
            return 0;
    return 1;
}

/* ---- the allow-list ---------------------------------------------------------------------- */

/* Decode a Z85 CURVE key (exactly 40 characters) into 32 bytes. 0 or -1. */
static int z85_key(const char *z85, size_t n, uint8_t out[32])
{
    char buf[KEY_Z85_LEN + 1];
    if (n != KEY_Z85_LEN)
        return -1;
    memcpy(buf, z85, n);
    buf[n] = '\0';
    return zmq_z85_decode(out, buf) ? 0 : -1;
}

static int add_key(rs_curve_t *c, const uint8_t key[32], int observer_only, int *cap)
{
    for (int i = 0; i < c->nkeys; i++)
        if (!memcmp(c->keys[i].key, key, 32)) {
            c->keys[i].observer_only = observer_only; /* the last line for a key wins */
            return 0;
        }
    if (c->nkeys == *cap) {
        int grown_cap = *cap ? 2 * *cap : 16;
        authorized_key_t *grown = realloc(c->keys, (size_t)grown_cap * sizeof *grown);
        if (!grown)
            return -1;
        c->keys = grown;
        *cap = grown_cap;
    }
    memcpy(c->keys[c->nkeys].key, key, 32);
    c->keys[c->nkeys++].observer_only = observer_only;
    return 0;
}

/* Read the allow-list file into c->keys. 0, or RS_EINVAL naming the file and line. */
static int load_authorized_keys(rs_curve_t *c, const char *path, rs_status_t *st)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return rs_fail(st, RS_EINVAL, "cannot read --authorized-keys %s: %s", path,
                       strerror(errno));
    char line[1024];
    int lineno = 0, cap = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *save = NULL, *key = strtok_r(line, " \t\r\n", &save);
        uint8_t raw[32];
        int is_key = key && z85_key(key, strlen(key), raw) == 0;
        if (!key || (!is_key && key[0] == '#'))
            continue; /* blank or comment */
        char *role = strtok_r(NULL, " \t\r\n", &save), *extra = strtok_r(NULL, " \t\r\n", &save);
        if (extra && extra[0] == '#')
            extra = NULL; /* a comment after the role */
        if (!is_key)
            rc = rs_fail(st, RS_EINVAL,
                         "%s line %d: '%.48s' is not a public key (40 Z85 characters, the "
                         "public-key of a robosim-cli keygen .key file)",
                         path, lineno, key);
        else if (!role || extra || (strcmp(role, "controller") && strcmp(role, "observer")))
            rc = rs_fail(st, RS_EINVAL,
                         "%s line %d: want 'KEY controller' or 'KEY observer', got a role of "
                         "'%.32s'%s",
                         path, lineno, role ? role : "", extra ? " and more" : "");
        else if (add_key(c, raw, !strcmp(role, "observer"), &cap) < 0)
            rc = rs_fail(st, RS_EEXHAUSTED, "out of memory reading %s", path);
    }
    if (rc == 0 && ferror(f))
        rc = rs_fail(st, RS_EINVAL, "cannot read --authorized-keys %s: %s", path, strerror(errno));
    fclose(f);
    return rc;
}

/* ---- the ZAP handler --------------------------------------------------------------------- */

#define ZAP_FRAMES 8 /* version, request id, domain, address, identity, mechanism, credentials */

static const authorized_key_t *find_key(const rs_curve_t *c, const uint8_t *key, size_t n)
{
    if (n != 32)
        return NULL;
    for (int i = 0; i < c->nkeys; i++)
        if (!memcmp(c->keys[i].key, key, 32))
            return &c->keys[i];
    return NULL;
}

static int send_str(void *sock, const char *s, int more)
{
    return zmq_send(sock, s, strlen(s), more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

/* Answer one ZAP request (its frames in f[0..n)). */
static void zap_answer(rs_curve_t *c, void *sock, zmq_msg_t *f, int n)
{
    const char *status = "500", *text = "malformed ZAP request";
    char user[16 + KEY_Z85_LEN + 1] = "";
    int ok_frames = n >= 7 && zmq_msg_size(&f[0]) == 3 && !memcmp(zmq_msg_data(&f[0]), "1.0", 3);
    if (ok_frames) {
        int curve = zmq_msg_size(&f[5]) == 5 && !memcmp(zmq_msg_data(&f[5]), "CURVE", 5);
        const authorized_key_t *k =
            curve ? find_key(c, zmq_msg_data(&f[6]), zmq_msg_size(&f[6])) : NULL;
        char z85[KEY_Z85_LEN + 1] = "?";
        if (curve && zmq_msg_size(&f[6]) == 32)
            zmq_z85_encode(z85, zmq_msg_data(&f[6]), 32);
        if (k) {
            status = "200";
            text = "OK";
            snprintf(user, sizeof user, "%s:%s", k->observer_only ? "observer" : "controller",
                     z85);
        } else {
            status = "400";
            text = curve ? "client key not in the server's --authorized-keys"
                         : "this server admits CURVE clients only";
            /* a refused client reconnects every 100 ms or so: one line a second at most */
            double now = rs_monotonic();
            if (now - c->logged_at >= 1.0) {
                rs_log(RS_LOG_INFO, "refused a connection from %.*s: %s %s (and %u more since "
                                    "the last such line)",
                       (int)zmq_msg_size(&f[3]), (const char *)zmq_msg_data(&f[3]),
                       curve ? "unlisted CURVE key" : "mechanism", z85, c->quiet);
                c->logged_at = now;
                c->quiet = 0;
            } else {
                c->quiet++;
            }
        }
    }
    /* the reply: version, request id (echoed), status code, text, user id, metadata */
    if (send_str(sock, "1.0", 1) < 0 ||
        zmq_send(sock, n >= 2 ? zmq_msg_data(&f[1]) : "", n >= 2 ? zmq_msg_size(&f[1]) : 0,
                 ZMQ_SNDMORE) < 0 ||
        send_str(sock, status, 1) < 0 || send_str(sock, text, 1) < 0 ||
        send_str(sock, user, 1) < 0 || send_str(sock, "", 0) < 0)
        rs_log(RS_LOG_WARN, "ZAP reply not sent: %s", zmq_strerror(zmq_errno()));
}

static void *zap_main(void *arg)
{
    rs_curve_t *c = arg;
    for (;;) {
        zmq_msg_t f[ZAP_FRAMES];
        int n = 0, more = 1, failed = 0;
        while (more) {
            zmq_msg_t *m = &f[n < ZAP_FRAMES ? n : ZAP_FRAMES - 1];
            if (n >= ZAP_FRAMES)
                zmq_msg_close(m); /* more frames than any ZAP request has: keep the last */
            zmq_msg_init(m);
            if (zmq_msg_recv(m, c->zap, 0) < 0) {
                failed = zmq_errno();
                zmq_msg_close(m);
                break;
            }
            more = zmq_msg_more(m);
            if (n < ZAP_FRAMES)
                n++;
        }
        if (!failed)
            zap_answer(c, c->zap, f, n);
        for (int i = 0; i < n; i++)
            zmq_msg_close(&f[i]);
        if (failed == ETERM)
            break;
        if (failed && failed != EINTR)
            rs_log(RS_LOG_WARN, "ZAP handler: receive failed: %s", zmq_strerror(failed));
    }
    zmq_close(c->zap);
    c->zap = NULL;
    return NULL;
}

/* ---- open, secure, close ----------------------------------------------------------------- */

int rs_curve_check_bind(const rs_server_config_t *cfg, rs_status_t *st)
{
    const char *eps[2] = {cfg->bind, cfg->stream_endpoint};
    if ((cfg->curve_secret_key != NULL) != (cfg->authorized_keys != NULL))
        return rs_fail(st, RS_EINVAL,
                       "--curve-secret-file and --authorized-keys go together: the server's key "
                       "pair and the client keys it admits");
    for (int i = 0; i < 2; i++)
        if (eps[i] && eps[i][0] && !cfg->curve_secret_key && !cfg->insecure &&
            !rs_endpoint_is_loopback(eps[i]))
            return rs_fail(st, RS_EPRECOND,
                           "%.64s is not loopback: refusing to serve it in plaintext. Make keys "
                           "with 'robosim-cli keygen --out server', pass --curve-secret-file "
                           "server.key_secret --authorized-keys FILE (see --help), or --insecure",
                           eps[i]);
    return 0;
}

int rs_curve_open(rs_server_t *s, rs_status_t *st)
{
    const rs_server_config_t *cfg = &s->cfg;
    if (!cfg->curve_secret_key) {
        if (cfg->bind && !rs_endpoint_is_loopback(cfg->bind))
            rs_log(RS_LOG_WARN, "serving %s in plaintext (--insecure): requests and controller "
                                "tokens can be read and forged on the network",
                   cfg->bind);
        return 0;
    }
    if (!zmq_has("curve"))
        return rs_fail(st, RS_EPRECOND, "this libzmq was built without CURVE (zmq_has(\"curve\") "
                                        "is false): install a libzmq with libsodium");
    rs_curve_t *c = calloc(1, sizeof *c);
    if (!c)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    s->curve = c;
    c->logged_at = -1e9; /* the first refusal is logged */
    if (z85_key(cfg->curve_secret_key, strlen(cfg->curve_secret_key), c->secret) < 0)
        return rs_fail(st, RS_EINVAL, "the server's CURVE secret key is not 40 Z85 characters");
    int rc = load_authorized_keys(c, cfg->authorized_keys, st);
    if (rc < 0)
        return rc;
    if (c->nkeys == 0)
        return rs_fail(st, RS_EINVAL,
                       "--authorized-keys %s lists no key: nobody could connect (one 'KEY "
                       "controller' or 'KEY observer' per line)",
                       cfg->authorized_keys);
    char secret_z85[KEY_Z85_LEN + 1];
    zmq_z85_encode(secret_z85, c->secret, 32);
    zmq_curve_public(c->public_z85, secret_z85);
    memset(secret_z85, 0, sizeof secret_z85);

    c->zap = zmq_socket(s->zctx, ZMQ_REP);
    int linger = 0;
    if (!c->zap || zmq_setsockopt(c->zap, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_bind(c->zap, ZAP_ENDPOINT) != 0) {
        rc = rs_fail(st, RS_EINTERNAL, "cannot start the ZAP handler on %s: %s", ZAP_ENDPOINT,
                     zmq_strerror(zmq_errno()));
        if (c->zap)
            zmq_close(c->zap);
        c->zap = NULL;
        return rc;
    }
    if (pthread_create(&c->thread, NULL, zap_main, c) != 0) {
        zmq_close(c->zap);
        c->zap = NULL;
        return rs_fail(st, RS_EINTERNAL, "cannot start the ZAP handler thread");
    }
    c->thread_started = 1;
    int observers = 0;
    for (int i = 0; i < c->nkeys; i++)
        observers += c->keys[i].observer_only;
    rs_log(RS_LOG_INFO,
           "CURVE on: server public key %s (clients pass it as --server-key); %d client keys "
           "admitted (%d controller, %d observer)",
           c->public_z85, c->nkeys, c->nkeys - observers, observers);
    return 0;
}

int rs_curve_secure(rs_server_t *s, void *sock)
{
    if (!s->curve)
        return 0;
    int on = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &on, sizeof on) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, s->curve->secret, 32) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) != 0)
        return -1;
    return 0;
}

void rs_curve_close(rs_server_t *s)
{
    rs_curve_t *c = s->curve;
    if (!c)
        return;
    if (c->thread_started)
        pthread_join(c->thread, NULL); /* ends once zmq_ctx_term has run */
    else if (c->zap)
        zmq_close(c->zap);
    memset(c->secret, 0, sizeof c->secret);
    free(c->keys);
    free(c);
    s->curve = NULL;
}
