/* Controller and observer roles through the real server: the controller token from CreateWorld,
 * every mutating request refused without it (missing, wrong, expired), readers needing none, a
 * controller reconnecting with its saved token, Claim before and after the lease lapses, and
 * world 1's start-up rule (claimable at once, or the token given with --controller-token). */
#include "rs_test.h"
#include "server_proc.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static server_proc_t server;

/* The state of world `id` as a reader sees it: time and the finger's state. */
static double world_time(rsc_client_t *c, uint64_t id)
{
    Robosim__V1__State *s = NULL;
    rsc_error_t err;
    int rc = rsc_get_state(c, id, &s, &err);
    CHECK(rc == 0 && s, "get_state needs no token: %s", err.message);
    double t = s ? s->time : NAN;
    rsc_free(s);
    return t;
}

#define EXPECT_DENIED(rc, what, word)                                                          \
    do {                                                                                       \
        CHECK((rc) == CODE(PERMISSION_DENIED) && strstr(err.message, (word)) &&                \
                  strstr(err.message, idstr),                                                  \
              "%s: want PERMISSION_DENIED naming world %s and saying '%s'; got %d: %s", what,  \
              idstr, word, (rc), err.message);                                                 \
    } while (0)

/* Every mutating operation, sent by a client that holds no token (or a wrong one). */
static void all_mutations_refused(rsc_client_t *other, uint64_t id, const char *word)
{
    rsc_error_t err;
    char idstr[32];
    snprintf(idstr, sizeof idstr, "world %llu", (unsigned long long)id);
    double f[] = {1.0}, t2[] = {0.0, 1.0}, v2[] = {0.5, 0.5}, target[] = {0.1, 0.1, 1};
    rsc_param_t p = {"", "control_dt", (double[]){0.02}, 1};
    EXPECT_DENIED(rsc_step(other, id, 1, 0, NULL, 0, NULL, &err), "step", word);
    EXPECT_DENIED(rsc_reset(other, id, 0, 0, NULL, &err), "reset", word);
    EXPECT_DENIED(rsc_set_force(other, id, "finger", f, 1, &err), "set_force", word);
    EXPECT_DENIED(rsc_set_params(other, id, &p, 1, &err), "set_params", word);
    EXPECT_DENIED(rsc_set_schedule(other, id, "finger", 0, t2, v2, 2, &err), "set_schedule", word);
    EXPECT_DENIED(rsc_set_target(other, id, "finger", target, 3, &err), "set_target", word);
    EXPECT_DENIED(rsc_destroy_world(other, id, &err), "destroy_world", word);
}

static void tokens_and_lease(void)
{
    rsc_client_t *ctl = client_of(server.endpoint, 3000);
    rsc_error_t err;
    uint64_t id = 0;
    int rc = rsc_create_world(ctl, "finger", NULL, 0, 3, &id, &err);
    CHECK(rc == 0 && id > 0, "create: %s", err.message);
    const char *tok = rsc_world_token(ctl, id);
    CHECK(tok && strlen(tok) == 32 && strspn(tok, "0123456789abcdef") == 32,
          "CreateWorld gives a 128-bit hex token: '%s'", tok ? tok : "(none)");
    char saved[RSC_TOKEN_MAX];
    snprintf(saved, sizeof saved, "%s", tok ? tok : "");

    /* the creator changes its world without ever handling the token */
    rc = rsc_step(ctl, id, 5, 0, NULL, 0, NULL, &err);
    CHECK(rc == 0, "controller steps: %s", err.message);

    /* another client: reads freely, changes nothing */
    rsc_client_t *other = client_of(server.endpoint, 3000);
    CHECK(fabs(world_time(other, id) - 0.05) < 1e-12, "a reader sees t = 0.05");
    Robosim__V1__Spec *spec = NULL;
    rc = rsc_get_spec(other, id, &spec, &err);
    CHECK(rc == 0 && spec && spec->world->lease_remaining > 0.0 && spec->world->lease_remaining <= 1.0,
          "get_spec needs no token and shows the lease: %s %g", err.message,
          spec ? spec->world->lease_remaining : -1.0);
    rsc_free(spec);
    Robosim__V1__ListWorldsReply *lw = NULL;
    rc = rsc_list_worlds(other, &lw, &err);
    CHECK(rc == 0 && lw, "list_worlds needs no token");
    rsc_free(lw);
    all_mutations_refused(other, id, "missing");
    rsc_set_world_token(other, id, "0123456789abcdef0123456789abcdef");
    all_mutations_refused(other, id, "wrong");
    rsc_set_world_token(other, id, "short");
    all_mutations_refused(other, id, "wrong");
    CHECK(fabs(world_time(other, id) - 0.05) < 1e-12, "refused requests left the world alone");

    /* a token sent by hand with rsc_call (which attaches nothing) */
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__Step step = ROBOSIM__V1__STEP__INIT;
    step.steps = 1;
    step.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    rq.world_id = id;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_STEP;
    rq.step = &step;
    rc = rsc_call(other, &rq, NULL, &err);
    CHECK(rc == CODE(PERMISSION_DENIED), "rsc_call without a token: %d", rc);
    rq.token = saved;
    rc = rsc_call(other, &rq, NULL, &err);
    CHECK(rc == 0, "rsc_call with the token: %s", err.message);

    /* the controller reconnects: a new client with the saved token carries on */
    rsc_close(&ctl);
    rsc_client_t *back = client_of(server.endpoint, 3000);
    rc = rsc_step(back, id, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == CODE(PERMISSION_DENIED), "a new client without the token is refused");
    CHECK(rsc_set_world_token(back, id, saved) == 0, "set token");
    rc = rsc_step(back, id, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == 0, "reconnected controller steps: %s", err.message);

    /* Claim while the lease runs: refused, saying how long it still runs */
    rsc_set_world_token(other, id, NULL);
    Robosim__V1__CreateWorldReply *cr = NULL;
    rc = rsc_claim(other, id, &cr, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION) && strstr(err.message, "another") &&
              strstr(err.message, " s"),
          "claim before the lease lapses: %d %s", rc, err.message);
    rsc_free(cr);
    /* the controller keeps the lease alive by changing the world */
    for (int i = 0; i < 3; i++) {
        sleep_s(0.5);
        rc = rsc_step(back, id, 1, 0, NULL, 0, NULL, &err);
        CHECK(rc == 0, "step renews the lease: %s", err.message);
    }
    rc = rsc_claim(other, id, NULL, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION), "a renewed lease cannot be claimed: %d %s", rc,
          err.message);
    /* the controller's own Claim renews and returns the same token */
    cr = NULL;
    rc = rsc_claim(back, id, &cr, &err);
    CHECK(rc == 0 && cr && strcmp(cr->token, saved) == 0 && cr->world->world_id == id,
          "claim by the controller keeps its token: %s", err.message);
    rsc_free(cr);

    /* silence: the lease lapses and another client takes over */
    sleep_s(1.3);
    Robosim__V1__ListWorldsReply *l2 = NULL;
    rsc_list_worlds(other, &l2, &err);
    for (size_t i = 0; l2 && i < l2->n_worlds; i++)
        if (l2->worlds[i]->world_id == id)
            CHECK(l2->worlds[i]->lease_remaining < 0, "lapsed lease shows negative: %g",
                  l2->worlds[i]->lease_remaining);
    rsc_free(l2);
    cr = NULL;
    rc = rsc_claim(other, id, &cr, &err);
    CHECK(rc == 0 && cr && cr->token && strlen(cr->token) == 32 && strcmp(cr->token, saved) != 0,
          "claim after the lease lapsed gives a new token: %d %s", rc, err.message);
    CHECK(cr && rsc_world_token(other, id) && strcmp(rsc_world_token(other, id), cr->token) == 0,
          "the client keeps the claimed token");
    rsc_free(cr);
    rc = rsc_step(other, id, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == 0, "the new controller steps: %s", err.message);
    /* the old token is refused as expired, for every mutating operation */
    char idstr[32];
    snprintf(idstr, sizeof idstr, "world %llu", (unsigned long long)id);
    rc = rsc_step(back, id, 1, 0, NULL, 0, NULL, &err);
    EXPECT_DENIED(rc, "old token after a claim", "expired");
    all_mutations_refused(back, id, "expired");
    /* the old controller still reads */
    CHECK(world_time(back, id) > 0.05, "the old controller may still read");

    /* destroy with the right token; the client forgets it */
    rc = rsc_destroy_world(other, id, &err);
    CHECK(rc == 0 && rsc_world_token(other, id) == NULL, "destroy by the controller: %s",
          err.message);
    rsc_close(&other);
    rsc_close(&back);
}

/* World 1 without --controller-token: claimable at once. */
static void default_world_claimable(void)
{
    rsc_client_t *c = client_of(server.endpoint, 3000);
    rsc_error_t err;
    int rc = rsc_step(c, 1, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == CODE(PERMISSION_DENIED) && strstr(err.message, "world 1"),
          "world 1 needs a token: %d %s", rc, err.message);
    Robosim__V1__CreateWorldReply *cr = NULL;
    rc = rsc_claim(c, 1, &cr, &err);
    CHECK(rc == 0 && cr && strlen(cr->token) == 32, "world 1 is claimable at start-up: %s",
          err.message);
    CHECK(cr && cr->world->lease_remaining > 0, "the claim starts a lease");
    rsc_free(cr);
    rc = rsc_step(c, 1, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == 0, "world 1 steps after the claim: %s", err.message);
    rsc_client_t *d = client_of(server.endpoint, 3000);
    rc = rsc_claim(d, 1, NULL, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION), "a second claim waits for the lease: %d %s", rc,
          err.message);
    rsc_close(&d);
    rsc_close(&c);
}

/* World 1 with --controller-token: that token controls it, and nobody else may claim it. */
static void default_world_with_token(const char *binary)
{
    const char *tok = "00112233445566778899aabbccddeeff";
    const char *extra[] = {"--lease", "30", "--controller-token", tok, NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --controller-token starts");
    if (sp.pid <= 0)
        return;
    rsc_client_t *c = client_of(sp.endpoint, 3000);
    rsc_error_t err;
    int rc = rsc_claim(c, 1, NULL, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION), "world 1 with a start-up token is not claimable: %d %s",
          rc, err.message);
    rc = rsc_step(c, 1, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == CODE(PERMISSION_DENIED), "no token: %d", rc);
    rsc_set_world_token(c, 1, tok);
    rc = rsc_step(c, 1, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == 0, "the --controller-token token steps world 1: %s", err.message);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");

    /* a malformed token on the command line is a usage error */
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        execl(binary, binary, "--controller-token", "xyz", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2, "--controller-token xyz exits 2");
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    const char *extra[] = {"--lease", "1", NULL};
    CHECK(server_start(&server, binary, extra) == 0, "server did not start on %s",
          server.endpoint);
    if (server.pid <= 0)
        return rs_test_done("test_roles");
    tokens_and_lease();
    default_world_claimable();
    CHECK(server_stop(&server) == 0, "server exits 0 on SIGTERM");
    default_world_with_token(binary);
    return rs_test_done("test_roles");
}
