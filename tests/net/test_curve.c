/* CurveZMQ through the real server: keys made by robosim-cli keygen load in the server and the
 * clients; a plaintext client, a client with an unlisted key and one with the wrong server key
 * get no answer while a listed controller creates and steps a world; a listed observer reads
 * and watches but is refused every create, fork, claim, change and MonteCarlo; the stream
 * sends nothing to unlisted or plaintext subscribers; start-up refuses a non-loopback endpoint
 * without keys (or --insecure), half a key configuration and a secret key file others may
 * read, with messages that say what to do; world quotas count per CURVE key: two connections
 * of one key share theirs, another key has its own, and no key holds more than
 * --max-worlds-share. */
#include "rs_test.h"
#include "server_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>

#include "rs_server.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static char dir[64], cli_bin[512];
static const char *server_bin;
static server_proc_t server;

static int run(const char *const *argv, char *out, size_t n)
{
    return run_capture(argv, out, n, 1);
}

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

/* robosim-cli keygen --out DIR/name: checks the files and returns the printed public key. */
static void keygen(const char *name, char pub[RSC_KEY_LEN + 1])
{
    char prefix[128], out[2048], pubfile[160], secfile[160];
    path_of(prefix, sizeof prefix, name);
    snprintf(pubfile, sizeof pubfile, "%s.key", prefix);
    snprintf(secfile, sizeof secfile, "%s.key_secret", prefix);
    const char *argv[] = {cli_bin, "keygen", "--out", prefix, NULL};
    int rc = run_capture(argv, out, sizeof out, 0); /* the key alone on stdout */
    CHECK(rc == 0 && strlen(out) > RSC_KEY_LEN && out[RSC_KEY_LEN] == '\n',
          "keygen %s: exit %d, output '%s'", name, rc, out);
    memcpy(pub, out, RSC_KEY_LEN);
    pub[RSC_KEY_LEN] = '\0';

    struct stat sb;
    CHECK(stat(secfile, &sb) == 0 && (sb.st_mode & 0777) == 0600,
          "%s is mode 0600 (got %03o)", secfile, (unsigned)(sb.st_mode & 0777));
    char p1[RSC_KEY_LEN + 1] = "", s1[RSC_KEY_LEN + 1] = "", p2[RSC_KEY_LEN + 1] = "";
    rsc_error_t err;
    rc = rsc_load_certificate(secfile, p1, s1, &err);
    CHECK(rc == 0 && !strcmp(p1, pub), "the secret file loads with the printed key: %s",
          err.message);
    char derived[RSC_KEY_LEN + 1];
    CHECK(zmq_curve_public(derived, s1) == 0 && !strcmp(derived, pub),
          "its secret key is the printed public key's");
    rc = rsc_load_certificate(pubfile, p2, NULL, &err);
    CHECK(rc == 0 && !strcmp(p2, pub), "the public file loads: %s", err.message);
    rc = rsc_load_certificate(pubfile, p2, s1, &err);
    CHECK(rc == RSC_EARG && strstr(err.message, "no secret-key"),
          "the public file is no key pair: %d %s", rc, err.message);
    FILE *f = fopen(pubfile, "r");
    char text[1024] = "";
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[got] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(text, "public-key = \"") && !strstr(text, "secret-key"),
          "the public file holds the public key only:\n%s", text);

    /* never overwrites */
    rc = run(argv, out, sizeof out);
    char again[RSC_KEY_LEN + 1] = "";
    rsc_load_certificate(secfile, again, NULL, &err);
    CHECK(rc == 1 && strstr(out, "never overwrites") && !strcmp(again, pub),
          "keygen again on %s refused, key kept: exit %d, '%s'", name, rc, out);
}

static rsc_options_t curve_options(const char *server_key, const char *client)
{
    char secfile[160];
    snprintf(secfile, sizeof secfile, "%s/%s.key_secret", dir, client);
    rsc_options_t o = {.timeout_ms = 3000};
    rsc_error_t err;
    int rc = rsc_options_set_curve(&o, server_key, secfile, &err);
    CHECK(rc == 0 && o.server_key[0], "options for %s: %s", client, err.message);
    return o;
}

/* A client that must not get in: rsc_connect gives RSC_EUNREACHABLE within its timeout. */
static void refused(const char *what, const rsc_options_t *o)
{
    rsc_options_t short_wait = o ? *o : (rsc_options_t){0};
    short_wait.timeout_ms = 700;
    rsc_error_t err;
    rsc_client_t *c = rsc_connect_with(server.endpoint, &short_wait, &err);
    CHECK(c == NULL && err.code == RSC_EUNREACHABLE, "%s: want UNREACHABLE, got %s (%s)", what,
          c ? "a connection" : rsc_error_name(err.code), err.message);
    rsc_close(&c);
}

/* A SUB socket on the stream for world `id` with `o`'s keys (NULL: plaintext). */
static void *subscriber(void *ctx, const char *ep, uint64_t id, const rsc_options_t *o)
{
    void *sub = zmq_socket(ctx, ZMQ_SUB);
    char topic[48];
    snprintf(topic, sizeof topic, "world/%llu/", (unsigned long long)id);
    int linger = 0;
    rsc_error_t err;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, topic, strlen(topic));
    CHECK(rsc_apply_curve(sub, o, &err) == 0, "curve on SUB: %s", err.message);
    CHECK(zmq_connect(sub, ep) == 0, "connect %s", ep);
    return sub;
}

/* Frames waiting on `sub` (read and counted, none kept). */
static int drain(void *sub)
{
    int n = 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (zmq_msg_recv(&m, sub, ZMQ_DONTWAIT) >= 0)
        n += !zmq_msg_more(&m);
    zmq_msg_close(&m);
    return n;
}

static void roles_and_stream(const char *server_pub)
{
    char server_pubfile[160];
    path_of(server_pubfile, sizeof server_pubfile, "server.key");
    rsc_options_t ctl_o = curve_options(server_pubfile, "ctl"); /* the key as its file */
    rsc_options_t obs_o = curve_options(server_pub, "obs");     /* the key as text */
    rsc_options_t stranger_o = curve_options(server_pub, "stranger");
    rsc_options_t wrong_server_o = curve_options(obs_o.public_key, "ctl");

    /* strangers first: the server must go on serving the listed clients after them */
    refused("a plaintext client", NULL);
    refused("an unlisted key", &stranger_o);
    refused("a listed key with the wrong server key", &wrong_server_o);

    rsc_error_t err;
    rsc_client_t *ctl = rsc_connect_with(server.endpoint, &ctl_o, &err);
    CHECK(ctl != NULL, "the listed controller connects: %s", err.message);
    rsc_client_t *obs = rsc_connect_with(server.endpoint, &obs_o, &err);
    CHECK(obs != NULL, "the listed observer connects: %s", err.message);
    if (!ctl || !obs)
        exit(rs_test_done("test_curve"));

    uint64_t id = 0;
    int rc = rsc_create_world(ctl, "finger", NULL, 0, 1, &id, &err);
    CHECK(rc == 0 && id > 0, "controller creates a world: %s", err.message);
    Robosim__V1__State *st = NULL;
    rc = rsc_step(ctl, id, 10, 0, NULL, 0, &st, &err);
    CHECK(rc == 0 && st && st->step_count == 10, "controller steps it 10 times: %s (step %llu)",
          err.message, st ? (unsigned long long)st->step_count : 0ull);
    rsc_free(st);

    /* the observer reads ... */
    Robosim__V1__HelloReply *h = NULL;
    rc = rsc_hello(obs, RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, &h, &err);
    CHECK(rc == 0 && h && h->stream_endpoint[0], "observer: hello: %s", err.message);
    char stream_ep[256] = "";
    if (h)
        snprintf(stream_ep, sizeof stream_ep, "%s", h->stream_endpoint);
    rsc_free(h);
    Robosim__V1__ListWorldsReply *lw = NULL;
    rc = rsc_list_worlds(obs, &lw, &err);
    CHECK(rc == 0 && lw && lw->n_worlds == 1 && lw->worlds[0]->world_id == id,
          "observer: list_worlds shows the world: %s", err.message);
    rsc_free(lw);
    st = NULL;
    rc = rsc_get_state(obs, id, &st, &err);
    CHECK(rc == 0 && st && st->step_count == 10, "observer: get_state: %s", err.message);
    rsc_free(st);

    /* ... but changes nothing, not even with the controller's token */
    rsc_set_world_token(obs, id, rsc_world_token(ctl, id));
    uint64_t other = 0;
    double f[] = {0.5};
#define OBSERVER_DENIED(call, what)                                                            \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        CHECK(rc_ == CODE(PERMISSION_DENIED) && strstr(err.message, "observer"),              \
              "observer: %s: want PERMISSION_DENIED (observer-only), got %d: %s", what, rc_,   \
              err.message);                                                                    \
    } while (0)
    OBSERVER_DENIED(rsc_step(obs, id, 1, 0, NULL, 0, NULL, &err), "step");
    OBSERVER_DENIED(rsc_set_force(obs, id, "finger", f, 1, &err), "set_force");
    OBSERVER_DENIED(rsc_reset(obs, id, 0, 0, NULL, &err), "reset");
    OBSERVER_DENIED(rsc_destroy_world(obs, id, &err), "destroy_world");
    OBSERVER_DENIED(rsc_create_world(obs, "finger", NULL, 0, 1, &other, &err), "create_world");
    OBSERVER_DENIED(rsc_fork_world(obs, id, NULL, 0, &other, &err), "fork_world");
    OBSERVER_DENIED(rsc_claim(obs, id, NULL, &err), "claim");
    rsc_batch_item_t item = {.world_id = id, .steps = 1};
    OBSERVER_DENIED(rsc_step_batch(obs, &item, 1, NULL, &err), "step_batch");
    /* MonteCarlo changes no world but spends the server's compute time: a controller's */
    rsc_sampler_t smp = {"finger.finger_v0", "uniform", 0.1, 0.9};
    const char *ret = "finger.x_f";
    OBSERVER_DENIED(rsc_monte_carlo(obs, id, 4, 1, 0, 0.1, &smp, 1, &ret, 1, NULL, &err),
                    "monte_carlo");
    Robosim__V1__MonteCarloReply *mcr = NULL;
    rc = rsc_monte_carlo(ctl, id, 4, 1, 0, 0.1, &smp, 1, &ret, 1, &mcr, &err);
    CHECK(rc == 0 && mcr && mcr->runs == 4, "the controller's key runs a MonteCarlo: %s",
          err.message);
    rsc_free(mcr);
    st = NULL;
    rc = rsc_get_state(ctl, id, &st, &err);
    CHECK(rc == 0 && st && st->step_count == 10, "the world is as the controller left it");
    rsc_free(st);

    /* the stream: the observer's key gets frames, an unlisted key and plaintext none */
    void *ctx = zmq_ctx_new();
    void *good = subscriber(ctx, stream_ep, id, &obs_o);
    void *stranger = subscriber(ctx, stream_ep, id, &stranger_o);
    void *plain = subscriber(ctx, stream_ep, id, NULL);
    int got = 0, leaked = 0;
    for (int i = 0; i < 100 && got < 5; i++) { /* up to ~3 s: subscriptions take a moment */
        struct timespec ts = {0, 30 * 1000 * 1000};
        nanosleep(&ts, NULL);
        rc = rsc_step(ctl, id, 1, 0, NULL, 0, NULL, &err);
        CHECK(rc == 0, "controller steps while watched: %s", err.message);
        got += drain(good);
        leaked += drain(stranger) + drain(plain);
    }
    CHECK(got >= 5, "the listed observer receives stream frames (%d)", got);
    CHECK(leaked == 0, "unlisted and plaintext subscribers receive nothing (%d frames)", leaked);
    zmq_close(good);
    zmq_close(stranger);
    zmq_close(plain);
    zmq_ctx_term(ctx);

    rsc_close(&obs);
    rsc_close(&ctl);
}

/* robosim-cli with keys from flags and from the environment: a controller creates, an observer
 * lists but cannot create, no keys gets no answer, and watch follows the stream with keys. */
static void cli_with_keys(const char *server_pub)
{
    char server_pubfile[160], ctl_sec[160], obs_sec[160], out[4096];
    path_of(server_pubfile, sizeof server_pubfile, "server.key");
    path_of(ctl_sec, sizeof ctl_sec, "ctl.key_secret");
    path_of(obs_sec, sizeof obs_sec, "obs.key_secret");
    const char *create[] = {cli_bin, "--endpoint", server.endpoint, "--server-key", server_pubfile,
                            "--client-key-file", ctl_sec, "create", "finger", "--show-token",
                            NULL};
    int rc = run_capture(create, out, sizeof out, 0);
    char *end, token[RSC_TOKEN_MAX] = "";
    unsigned long long id = strtoull(out, &end, 10);
    if (*end == '\n')
        sscanf(end + 1, "%63s", token);
    CHECK(rc == 0 && id > 0 && strlen(token) == 32,
          "cli create with --server-key and --client-key-file: exit %d, '%s'", rc, out);

    const char *plain[] = {cli_bin, "--endpoint", server.endpoint, "--timeout", "500", "hello",
                           NULL};
    rc = run(plain, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "UNREACHABLE") && strstr(out, "--server-key"),
          "cli without keys gets no answer and is told about keys: exit %d, '%s'", rc, out);

    setenv("ROBOSIM_SERVER_KEY", server_pub, 1);
    setenv("ROBOSIM_CLIENT_KEY_FILE", obs_sec, 1);
    const char *list[] = {cli_bin, "--endpoint", server.endpoint, "list", NULL};
    rc = run(list, out, sizeof out);
    char idword[32];
    snprintf(idword, sizeof idword, "%llu", id);
    CHECK(rc == 0 && strstr(out, idword) && strstr(out, "finger"),
          "cli list as the observer, keys from the environment: exit %d, '%s'", rc, out);
    const char *obs_create[] = {cli_bin, "--endpoint", server.endpoint, "create", "finger", NULL};
    rc = run(obs_create, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "PERMISSION_DENIED") && strstr(out, "observer"),
          "cli create as the observer is refused: exit %d, '%s'", rc, out);

    /* watch with the observer's keys (from the environment) while the controller steps */
    int fd[2];
    if (pipe(fd) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl(cli_bin, cli_bin, "--endpoint", server.endpoint, "--world", idword, "watch",
              "--count", "3", "--seconds", "8", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    unsetenv("ROBOSIM_SERVER_KEY");
    unsetenv("ROBOSIM_CLIENT_KEY_FILE");
    rsc_options_t o = curve_options(server_pub, "ctl");
    rsc_error_t err;
    rsc_client_t *ctl = rsc_connect_with(server.endpoint, &o, &err);
    CHECK(ctl != NULL, "controller connects: %s", err.message);
    int status = -1, exited = 0;
    rsc_set_world_token(ctl, id, token);
    for (int i = 0; i < 250 && ctl && !exited; i++) { /* up to ~8 s */
        exited = waitpid(pid, &status, WNOHANG) == pid;
        rc = rsc_step(ctl, id, 1, 0, NULL, 0, NULL, &err);
        CHECK(rc == 0, "controller steps the CLI's world with its token: %s", err.message);
        struct timespec ts = {0, 30 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!exited) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    ssize_t got = read(fd[0], out, sizeof out - 1);
    out[got > 0 ? got : 0] = '\0';
    close(fd[0]);
    int lines = 0;
    for (char *p = out; (p = strstr(p, "seq ")); p++)
        lines++;
    CHECK(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0 && lines == 3,
          "cli watch with keys prints 3 frames and exits 0: '%s'", out);
    rsc_close(&ctl);
}

/* A start-up that must fail: exit status 2 or 1 and every word of `want` in its output. */
static void start_refused(const char *what, const char *const *args, const char *const *want)
{
    const char *argv[16] = {server_bin};
    int n = 1;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char out[4096];
    int rc = run(argv, out, sizeof out);
    int all = 1;
    for (int i = 0; want[i]; i++)
        all &= strstr(out, want[i]) != NULL;
    CHECK((rc == 1 || rc == 2) && all, "%s: want a refusal naming what to do; exit %d:\n%s", what,
          rc, out);
}

static void startup_checks(void)
{
    char bind_any[64], stream_any[64], ctl_sec[160], auth[160], bad_auth[160], test_net[64];
    snprintf(bind_any, sizeof bind_any, "tcp://0.0.0.0:%d", free_port());
    snprintf(stream_any, sizeof stream_any, "tcp://0.0.0.0:%d", free_port());
    snprintf(test_net, sizeof test_net, "tcp://192.0.2.1:%d", free_port());
    path_of(ctl_sec, sizeof ctl_sec, "server.key_secret");
    path_of(auth, sizeof auth, "authorized_keys");
    path_of(bad_auth, sizeof bad_auth, "bad_keys");
    const char *refusal[] = {"not loopback", "robosim-cli keygen", "--curve-secret-file",
                             "--authorized-keys", "--insecure", NULL};
    start_refused("--bind 0.0.0.0 without keys",
                  (const char *[]){"--bind", bind_any, "--no-stream", "--no-world", NULL},
                  refusal);
    char local[64];
    snprintf(local, sizeof local, "tcp://127.0.0.1:%d", free_port());
    start_refused("--stream 0.0.0.0 without keys",
                  (const char *[]){"--bind", local, "--stream", stream_any, "--no-world", NULL},
                  refusal);
    start_refused("a key without the allow-list",
                  (const char *[]){"--bind", local, "--no-stream", "--curve-secret-file", ctl_sec,
                                   NULL},
                  (const char *[]){"go together", NULL});
    char server_pubfile[160];
    path_of(server_pubfile, sizeof server_pubfile, "server.key");
    start_refused("the public key file as the server's key pair",
                  (const char *[]){"--curve-secret-file", server_pubfile, "--authorized-keys",
                                   auth, NULL},
                  (const char *[]){"--curve-secret-file", "no secret-key", NULL});
    start_refused("the allow-list as the server's key pair",
                  (const char *[]){"--curve-secret-file", auth, "--authorized-keys", auth, NULL},
                  (const char *[]){"--curve-secret-file", "no public-key", NULL});
    FILE *f = fopen(bad_auth, "w");
    fprintf(f, "# fine\n\nnot-a-key controller\n");
    fclose(f);
    start_refused("a bad allow-list line",
                  (const char *[]){"--bind", local, "--no-stream", "--curve-secret-file", ctl_sec,
                                   "--authorized-keys", bad_auth, NULL},
                  (const char *[]){"bad_keys line 3", "not a public key", NULL});
    /* a secret key others may read is refused, as an open --snapshot-key-file is */
    char open_sec[160], cmd[512];
    path_of(open_sec, sizeof open_sec, "open.key_secret");
    snprintf(cmd, sizeof cmd, "cp %s %s && chmod 640 %s", ctl_sec, open_sec, open_sec);
    CHECK(system(cmd) == 0, "%s", cmd);
    start_refused("a secret key file its group may read",
                  (const char *[]){"--bind", local, "--no-stream", "--no-world",
                                   "--curve-secret-file", open_sec, "--authorized-keys", auth,
                                   NULL},
                  (const char *[]){"open.key_secret", "mode 640", "chmod 600", NULL});
    unlink(open_sec);
    /* --insecure passes the check: this address is not ours (TEST-NET-1), so the bind itself
     * fails, and no packet leaves the machine */
    char out[4096];
    const char *argv[] = {server_bin, "--bind", test_net, "--no-stream", "--no-world",
                          "--insecure", NULL};
    int rc = run(argv, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "cannot bind") && !strstr(out, "not loopback"),
          "--insecure lets a non-loopback endpoint through the check: exit %d:\n%s", rc, out);

    /* which endpoints count as loopback (strings only: nothing is bound to them) */
    const char *loop[] = {"tcp://127.0.0.1:7", "tcp://127.1.2.3:1", "tcp://localhost:7",
                          "tcp://[::1]:7", "ipc:///tmp/x", "inproc://x", NULL};
    const char *net[] = {"tcp://0.0.0.0:7", "tcp://*:7", "tcp://[::]:7",
                         "tcp://10.0.0.1:7", "tcp://127.0.0.1.example.com:7",
                         "tcp://eth0:7", "ws://127.0.0.1:7", "tcp://128.0.0.1:1", NULL};
    for (int i = 0; loop[i]; i++)
        CHECK(rs_endpoint_is_loopback(loop[i]), "%s is loopback", loop[i]);
    for (int i = 0; net[i]; i++)
        CHECK(!rs_endpoint_is_loopback(net[i]), "%s is not loopback", net[i]);
}

static void option_errors(const char *server_pub)
{
    rsc_options_t o = {0};
    rsc_error_t err;
    char pubfile[160];
    path_of(pubfile, sizeof pubfile, "ctl.key");
    CHECK(rsc_options_set_curve(&o, server_pub, NULL, &err) == RSC_EARG &&
              strstr(err.message, "key pair"),
          "a server key alone is refused: %s", err.message);
    CHECK(rsc_options_set_curve(&o, NULL, pubfile, &err) == RSC_EARG &&
              strstr(err.message, "server's public key"),
          "a client key alone is refused: %s", err.message);
    CHECK(rsc_options_set_curve(&o, server_pub, pubfile, &err) == RSC_EARG &&
              strstr(err.message, "no secret-key"),
          "a public file as the client's pair is refused: %s", err.message);
    CHECK(rsc_options_set_curve(&o, "short", pubfile, &err) == RSC_EARG &&
              strstr(err.message, "40 Z85"),
          "a server key that is neither a key nor a file is refused: %s", err.message);
    CHECK(rsc_options_set_curve(&o, NULL, "", &err) == 0 && !o.server_key[0],
          "no keys: plaintext");
    CHECK(rsc_options_set_curve(NULL, NULL, NULL, &err) == RSC_EARG, "NULL options");
}

/* Quotas by key: --max-worlds 6, no per-client limit, --max-worlds-share 0.5: each key holds
 * 3 worlds at most, however many connections it opens; another key still gets its own. */
static void quotas_by_key(const char *server_pub, const char *auth, const char *server_sec)
{
    rsc_options_t a_o = curve_options(server_pub, "ctl"), b_o = curve_options(server_pub, "ctl2");
    const char *extra[] = {"--no-world", "--curve-secret-file", server_sec, "--authorized-keys",
                           auth, "--max-worlds", "6", "--max-worlds-per-client", "0", NULL};
    CHECK(server_start_with(&server, server_bin, extra, &a_o) == 0, "quota server starts");
    if (server.pid <= 0)
        return;
    rsc_error_t err;
    rsc_client_t *a1 = rsc_connect_with(server.endpoint, &a_o, &err);
    rsc_client_t *a2 = rsc_connect_with(server.endpoint, &a_o, &err);
    rsc_client_t *b = rsc_connect_with(server.endpoint, &b_o, &err);
    CHECK(a1 && a2 && b, "three connections, two keys: %s", err.message);
    if (!a1 || !a2 || !b) {
        server_stop(&server);
        return;
    }
    int made = 0, rc = 0;
    for (int i = 0; i < 6; i++) {
        uint64_t id = 0;
        if ((rc = rsc_create_world(i % 2 ? a2 : a1, "finger", NULL, 0, 1, &id, &err)) != 0)
            break;
        made++;
    }
    CHECK(made == 3 && rc == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "CURVE key") &&
              strstr(err.message, "--max-worlds-share 0.5") && strstr(err.message, "DestroyWorld"),
          "one key over two connections holds 3 of 6 worlds: made %d, then %d %s", made, rc,
          err.message);
    made = 0;
    for (int i = 0; i < 4; i++) {
        uint64_t id = 0;
        if ((rc = rsc_create_world(b, "finger", NULL, 0, 1, &id, &err)) != 0)
            break;
        made++;
    }
    CHECK(made == 3, "another key still gets its share: made %d (%s)", made, err.message);
    rsc_close(&a1);
    rsc_close(&a2);
    rsc_close(&b);
    CHECK(server_stop(&server) == 0, "the quota server stops cleanly");
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    server_bin = binary;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", binary);
    snprintf(cli_bin, sizeof cli_bin, "%s/robosim-cli", dirname(copy));
    snprintf(dir, sizeof dir, "/tmp/robosim-curve-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }

    char server_pub[RSC_KEY_LEN + 1], ctl_pub[RSC_KEY_LEN + 1], obs_pub[RSC_KEY_LEN + 1],
        stranger_pub[RSC_KEY_LEN + 1], ctl2_pub[RSC_KEY_LEN + 1];
    keygen("server", server_pub);
    keygen("ctl", ctl_pub);
    keygen("obs", obs_pub);
    keygen("stranger", stranger_pub);
    keygen("ctl2", ctl2_pub);
    char auth[160], server_sec[160];
    path_of(auth, sizeof auth, "authorized_keys");
    path_of(server_sec, sizeof server_sec, "server.key_secret");
    /* Z85 keys may hold '#', which also starts comments: list one that does (about 4 keys in
     * 10 do) */
    char hash_pub[RSC_KEY_LEN + 1], hash_sec[RSC_KEY_LEN + 1];
    do
        zmq_curve_keypair(hash_pub, hash_sec);
    while (!strchr(hash_pub, '#'));
    FILE *f = fopen(auth, "w");
    fprintf(f, "# who may connect\n%s controller\n\n   %s\tobserver   # watches only\n"
               "#%s\n%s observer #\n%s controller\n",
            ctl_pub, obs_pub, stranger_pub, hash_pub, ctl2_pub);
    fclose(f);

    startup_checks();
    option_errors(server_pub);

    rsc_options_t wait = curve_options(server_pub, "ctl");
    const char *extra[] = {"--no-world", "--curve-secret-file", server_sec, "--authorized-keys",
                           auth, NULL};
    CHECK(server_start_with(&server, server_bin, extra, &wait) == 0,
          "a CURVE server starts with keygen's keys and admits the listed controller");
    if (server.pid > 0) {
        roles_and_stream(server_pub);
        cli_with_keys(server_pub);
        CHECK(server_stop(&server) == 0, "the CURVE server stops cleanly");
    }
    quotas_by_key(server_pub, auth, server_sec);

    const char *names[] = {"server", "ctl", "obs", "stranger", "ctl2"};
    char p[160];
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s.key", dir, names[i]);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s.key_secret", dir, names[i]);
        unlink(p);
    }
    unlink(auth);
    path_of(p, sizeof p, "bad_keys");
    unlink(p);
    rmdir(dir);
    return rs_test_done("test_curve");
}
