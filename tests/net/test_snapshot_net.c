/* Snapshots and forks through the real server: GetState{snapshot}, SetState and ForkWorld give
 * bit-identical continuations for every preset; truncated, corrupted, empty and other-preset
 * snapshots are refused with their codes and leave the world unchanged; SetState needs the
 * controller token, ForkWorld makes the asker the fork's controller. Snapshots carry the
 * server's MAC: any change, a forged snapshot with a recomputed checksum, or one from a server
 * with another key is UNAUTHENTICATED; servers sharing --snapshot-key-file restore each
 * other's. */
#include "core/snapshot_bytes.h"
#include "rs_snapshot.h"
#include "rs_test.h"
#include "server_proc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static server_proc_t server;

/* A State as bytes, without what legitimately differs between the runs compared: the world id
 * (a fork has its own) and the stream sequence number. */
static void append_state(unsigned char **buf, size_t *n, Robosim__V1__State *s)
{
    uint64_t id = s->world_id, seq = s->seq;
    s->world_id = 0;
    s->seq = 0;
    size_t len = robosim__v1__state__get_packed_size(s);
    *buf = realloc(*buf, *n + len);
    robosim__v1__state__pack(s, *buf + *n);
    *n += len;
    s->world_id = id;
    s->seq = seq;
}

/* Commands for every entity of a spec, varied with k (as tests/core/test_snapshot.c). */
static size_t commands(const Robosim__V1__Spec *spec, const Robosim__V1__State *now, int k,
                       rsc_command_t *cmds, double (*vals)[8])
{
    for (size_t e = 0; e < spec->n_entities; e++) {
        const char *kind = spec->entities[e]->kind;
        const double *x = now->entities[e]->state;
        if (!strcmp(kind, "diff_drive")) {
            vals[e][0] = 3.0 + k % 3;
            vals[e][1] = 3.0 - k % 2;
        } else if (!strcmp(kind, "finger")) {
            vals[e][0] = k % 4 < 3 ? 40.0 : -10.0;
        } else {
            vals[e][0] = x[0] + 0.3 * sin(0.7 * k);
            vals[e][1] = x[1] - 0.25 * cos(0.5 * k);
            for (size_t a = 2; a < 8; a++) /* robots with more actuators (mobile_manipulator) */
                vals[e][a] = 0.2 * sin(0.3 * k + (double)a);
        }
        cmds[e].entity = spec->entities[e]->name;
        cmds[e].values = vals[e];
        cmds[e].nvalues = spec->entities[e]->n_actuators;
        CHECK(cmds[e].nvalues <= 8, "%s has more actuators than this test fills", kind);
    }
    return spec->n_entities;
}

/* Step world `id` through a fixed program, appending every reply State to *buf. */
static int program(rsc_client_t *c, uint64_t id, const Robosim__V1__Spec *spec,
                   unsigned char **buf, size_t *n)
{
    static const uint32_t chunk[] = {1, 4, 2, 9, 1, 3};
    rsc_error_t err;
    Robosim__V1__State *now = NULL;
    if (rsc_get_state(c, id, &now, &err) != 0)
        return -1;
    for (int k = 0; k < 12; k++) {
        rsc_command_t cmds[8];
        double vals[8][8];
        size_t nc = commands(spec, now, 20 + k, cmds, vals);
        if (k % 2)
            nc = 0; /* hold the commands in force */
        if (k == 5) {
            double t[] = {now->time + 0.02, now->time + 0.07}, v[] = {cmds[0].values[0], 0};
            if (rsc_set_schedule(c, id, spec->entities[0]->name, 0, t, v, 2, &err) != 0)
                fprintf(stderr, "schedule: %s\n", err.message);
        }
        Robosim__V1__State *s = NULL;
        int rc = rsc_step(c, id, chunk[k % 6], 0, cmds, nc, &s, &err);
        if (rc != 0) {
            fprintf(stderr, "step: %s\n", err.message);
            rsc_free(now);
            return -1;
        }
        append_state(buf, n, s);
        rsc_free(now);
        now = s;
    }
    rsc_free(now);
    return 0;
}

static void preset_roundtrip(rsc_client_t *c, const char *preset)
{
    rsc_error_t err;
    uint64_t id = 0;
    int rc = rsc_create_world(c, preset, NULL, 0, 11, &id, &err);
    CHECK(rc == 0, "%s: create: %s", preset, err.message);
    Robosim__V1__Spec *spec = NULL;
    rsc_get_spec(c, id, &spec, &err);
    if (!spec)
        return;
    unsigned char *scratch = NULL;
    size_t ns = 0;
    CHECK(program(c, id, spec, &scratch, &ns) == 0, "%s: history", preset);
    free(scratch);

    Robosim__V1__State *snap = NULL;
    rc = rsc_get_snapshot(c, id, &snap, &err);
    CHECK(rc == 0 && snap && snap->snapshot.len > 24, "%s: snapshot: %s", preset, err.message);
    if (!snap) {
        rsc_free(spec);
        return;
    }
    Robosim__V1__State *plain = NULL;
    rsc_get_state(c, id, &plain, &err);
    CHECK(plain && plain->snapshot.len == 0, "%s: GetState without snapshot carries none", preset);
    rsc_free(plain);

    unsigned char *ref = NULL, *again = NULL, *forked = NULL, *forked_now = NULL;
    size_t nref = 0, nagain = 0, nforked = 0, nforked_now = 0;
    CHECK(program(c, id, spec, &ref, &nref) == 0, "%s: reference run", preset);

    /* SetState, then the same program */
    Robosim__V1__State *restored = NULL;
    rc = rsc_set_state(c, id, snap->snapshot.data, snap->snapshot.len, &restored, &err);
    CHECK(rc == 0 && restored && restored->time == snap->time &&
              restored->step_count == snap->step_count,
          "%s: set_state: %s", preset, err.message);
    rsc_free(restored);
    CHECK(program(c, id, spec, &again, &nagain) == 0 && nagain == nref &&
              memcmp(ref, again, nref) == 0,
          "%s: after SetState the states are bit-identical (%zu vs %zu bytes)", preset, nref,
          nagain);

    /* ForkWorld from the snapshot, by another client: it controls the fork */
    rsc_client_t *other = client_of(server.endpoint, 5000);
    uint64_t fork_id = 0;
    rc = rsc_fork_world(other, id, snap->snapshot.data, snap->snapshot.len, &fork_id, &err);
    CHECK(rc == 0 && fork_id != id && rsc_world_token(other, fork_id),
          "%s: fork from a snapshot: %s", preset, err.message);
    CHECK(program(other, fork_id, spec, &forked, &nforked) == 0 && nforked == nref &&
              memcmp(ref, forked, nref) == 0,
          "%s: the fork's states are bit-identical", preset);
    rc = rsc_step(c, fork_id, 1, 0, NULL, 0, NULL, &err);
    CHECK(rc == CODE(PERMISSION_DENIED), "%s: the source's controller does not control the fork",
          preset);
    rsc_destroy_world(other, fork_id, &err);

    /* ForkWorld of the world now (after SetState + program): the fork equals a snapshot now */
    rc = rsc_set_state(c, id, snap->snapshot.data, snap->snapshot.len, NULL, &err);
    CHECK(rc == 0, "%s: set_state again: %s", preset, err.message);
    rc = rsc_fork_world(other, id, NULL, 0, &fork_id, &err);
    CHECK(rc == 0, "%s: fork now: %s", preset, err.message);
    CHECK(program(other, fork_id, spec, &forked_now, &nforked_now) == 0 && nforked_now == nref &&
              memcmp(ref, forked_now, nref) == 0,
          "%s: a fork of the world now steps as the world would", preset);
    rsc_destroy_world(other, fork_id, &err);
    rsc_close(&other);

    free(ref);
    free(again);
    free(forked);
    free(forked_now);
    rsc_free(snap);
    rsc_free(spec);
    rsc_destroy_world(c, id, &err);
}

/* The world's snapshot bytes now (to check it is unchanged). */
static Robosim__V1__State *snapshot_of(rsc_client_t *c, uint64_t id)
{
    rsc_error_t err;
    Robosim__V1__State *s = NULL;
    rsc_get_snapshot(c, id, &s, &err);
    return s;
}

static void bad_snapshots(void)
{
    rsc_client_t *c = client_of(server.endpoint, 5000);
    rsc_error_t err;
    uint64_t id = 0, other_id = 0;
    rsc_create_world(c, "finger", NULL, 0, 1, &id, &err);
    rsc_create_world(c, "diff_drive", NULL, 0, 1, &other_id, &err);
    double f = 40;
    rsc_set_force(c, id, "finger", &f, 1, &err);
    rsc_step(c, id, 20, 0, NULL, 0, NULL, &err);
    Robosim__V1__State *good = snapshot_of(c, id);
    CHECK(good && good->snapshot.len > 0, "snapshot");
    if (!good)
        return;
    rsc_step(c, id, 5, 0, NULL, 0, NULL, &err);
    Robosim__V1__State *before = snapshot_of(c, id);
    size_t n = good->snapshot.len;
    unsigned char *b = malloc(n);

    struct {
        const char *what;
        size_t len;
        int flip; /* byte to flip, or -1 */
        int code;
        const char *word;
    } cases[] = {
        /* the server's MAC covers every byte: any change is a snapshot it did not make */
        {"truncated to half", n / 2, -1, CODE(UNAUTHENTICATED), "not authenticated"},
        {"one byte short", n - 1, -1, CODE(UNAUTHENTICATED), "not authenticated"},
        {"ten bytes", 10, -1, CODE(UNAUTHENTICATED), "not authenticated"},
        {"a flipped bit in the middle", n, (int)(n / 2), CODE(UNAUTHENTICATED), "--snapshot-key-file"},
        {"a flipped bit in the checksum", n, (int)n - 40, CODE(UNAUTHENTICATED), "not authenticated"},
        {"a flipped bit in the MAC", n, (int)n - 3, CODE(UNAUTHENTICATED), "not authenticated"},
        {"another format version", n, 8, CODE(UNAUTHENTICATED), "not authenticated"},
        {"not a snapshot", n, 0, CODE(UNAUTHENTICATED), "not authenticated"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, good->snapshot.data, n);
        if (cases[i].flip >= 0)
            b[cases[i].flip] ^= 0x04;
        int rc = rsc_set_state(c, id, b, cases[i].len, NULL, &err);
        CHECK(rc == cases[i].code && strstr(err.message, cases[i].word),
              "%s: got %d '%s', want %d with '%s'", cases[i].what, rc, err.message,
              cases[i].code, cases[i].word);
        uint64_t fork_id = 0;
        rc = rsc_fork_world(c, id, b, cases[i].len, &fork_id, &err);
        CHECK(rc == cases[i].code && fork_id == 0, "fork with %s: %d %s", cases[i].what, rc,
              err.message);
    }
    /* forged: a state value changed and the core's checksum recomputed, the MAC kept */
    {
        size_t core = n - 32;
        memcpy(b, good->snapshot.data, n);
        b[core / 2] ^= 0x01;
        reseal(b, core);
        int rc = rsc_set_state(c, id, b, n, NULL, &err);
        CHECK(rc == CODE(UNAUTHENTICATED), "forged bytes with a recomputed checksum: %d %s", rc,
              err.message);
        rc = rsc_set_state(c, id, b, core, NULL, &err);
        CHECK(rc == CODE(UNAUTHENTICATED), "the core's bytes without the MAC: %d %s", rc,
              err.message);
    }
    int rc = rsc_set_state(c, id, NULL, 0, NULL, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "no snapshot"), "empty: %d %s", rc,
          err.message);
    rc = rsc_set_state(c, other_id, good->snapshot.data, n, NULL, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION) && strstr(err.message, "'finger'") &&
              strstr(err.message, "'diff_drive'"),
          "another preset: %d %s", rc, err.message);
    uint64_t fork_id = 0;
    rc = rsc_fork_world(c, other_id, good->snapshot.data, n, &fork_id, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION), "fork of a diff_drive from a finger snapshot: %d %s", rc,
          err.message);

    /* SetState changes the world: the controller's token is needed */
    rsc_client_t *reader = client_of(server.endpoint, 5000);
    rc = rsc_set_state(reader, id, good->snapshot.data, n, NULL, &err);
    CHECK(rc == CODE(PERMISSION_DENIED), "set_state without the token: %d %s", rc, err.message);
    /* reading a snapshot needs none */
    Robosim__V1__State *rs = snapshot_of(reader, id);
    CHECK(rs && rs->snapshot.len == before->snapshot.len, "a reader gets a snapshot");
    rsc_free(rs);
    rsc_close(&reader);

    /* none of it changed the world */
    Robosim__V1__State *after = snapshot_of(c, id);
    CHECK(after && before && after->snapshot.len == before->snapshot.len &&
              memcmp(after->snapshot.data, before->snapshot.data, before->snapshot.len) == 0,
          "refused snapshots leave the world unchanged");
    rsc_free(after);
    rsc_free(before);

    /* a world limit hit by a fork is reported */
    rsc_step(c, id, 1, 0, NULL, 0, NULL, &err);
    CHECK(err.code == 0, "the world still steps: %s", err.message);
    free(b);
    rsc_free(good);
    rsc_destroy_world(c, id, &err);
    rsc_destroy_world(c, other_id, &err);
    rsc_close(&c);
}

/* A key file with `n` bytes of `fill` (or random bytes when fill < 0) and mode `mode`. */
static void key_file(char *path, size_t cap, int n, int fill, mode_t mode)
{
    snprintf(path, cap, "/tmp/robosim-key-XXXXXX");
    int fd = mkstemp(path);
    unsigned char k[64];
    FILE *r = fopen("/dev/urandom", "rb");
    CHECK(r && fread(k, 1, sizeof k, r) == sizeof k, "random key bytes");
    if (r)
        fclose(r);
    if (fill >= 0)
        memset(k, fill, sizeof k);
    CHECK(fd >= 0 && write(fd, k, (size_t)n) == n && fchmod(fd, mode) == 0, "key file %s", path);
    close(fd);
}

/* Servers sharing --snapshot-key-file restore each other's snapshots and step on bit for bit;
 * a server with another key refuses them; unusable key files stop the server at start. */
static void shared_keys(const char *binary)
{
    char key[64], other[64], open_key[64], short_key[64];
    key_file(key, sizeof key, 32, -1, 0600);
    key_file(other, sizeof other, 32, -1, 0600);
    key_file(open_key, sizeof open_key, 32, -1, 0644);
    key_file(short_key, sizeof short_key, 20, -1, 0600);
    const char *with_key[] = {"--snapshot-key-file", key, "--no-world", NULL};
    const char *with_other[] = {"--snapshot-key-file", other, "--no-world", NULL};
    server_proc_t a, b, c;
    CHECK(server_start(&a, binary, with_key) == 0, "server A with the key file");
    CHECK(server_start(&b, binary, with_key) == 0, "server B with the same key file");
    CHECK(server_start(&c, binary, with_other) == 0, "server C with another key file");
    rsc_error_t err;
    rsc_client_t *ca = rsc_connect(a.endpoint, 3000, &err), *cb = rsc_connect(b.endpoint, 3000, &err),
                 *cc = rsc_connect(c.endpoint, 3000, &err);
    uint64_t wa = 0, wb = 0, wc = 0;
    rsc_create_world(ca, "finger", NULL, 0, 1, &wa, &err);
    rsc_create_world(cb, "finger", NULL, 0, 2, &wb, &err);
    rsc_create_world(cc, "finger", NULL, 0, 2, &wc, &err);
    double f = 30;
    rsc_set_force(ca, wa, "finger", &f, 1, &err);
    rsc_step(ca, wa, 17, 0, NULL, 0, NULL, &err);
    Robosim__V1__State *sa = snapshot_of(ca, wa);
    int rc = rsc_set_state(cb, wb, sa->snapshot.data, sa->snapshot.len, NULL, &err);
    CHECK(rc == 0, "B restores A's snapshot (same key file): %d %s", rc, err.message);
    uint64_t fb = 0;
    rc = rsc_fork_world(cb, wb, sa->snapshot.data, sa->snapshot.len, &fb, &err);
    CHECK(rc == 0 && fb > 0, "and forks from it: %d %s", rc, err.message);
    rc = rsc_set_state(cc, wc, sa->snapshot.data, sa->snapshot.len, NULL, &err);
    CHECK(rc == CODE(UNAUTHENTICATED) && strstr(err.message, "--snapshot-key-file"),
          "C (another key) refuses it: %d %s", rc, err.message);
    uint64_t fc = 0;
    rc = rsc_fork_world(cc, wc, sa->snapshot.data, sa->snapshot.len, &fc, &err);
    CHECK(rc == CODE(UNAUTHENTICATED) && fc == 0, "and makes no fork from it: %d %s", rc,
          err.message);
    /* stepping on: A's world and B's restored one and B's fork agree bit for bit (their
     * snapshots, MACs included, are the same bytes) */
    for (int k = 0; k < 3; k++) {
        double g = k == 1 ? -5 : 12;
        rsc_set_force(ca, wa, "finger", &g, 1, &err);
        rsc_set_force(cb, wb, "finger", &g, 1, &err);
        rsc_set_force(cb, fb, "finger", &g, 1, &err);
        rsc_step(ca, wa, 9, 0, NULL, 0, NULL, &err);
        rsc_step(cb, wb, 9, 0, NULL, 0, NULL, &err);
        rsc_step(cb, fb, 9, 0, NULL, 0, NULL, &err);
    }
    Robosim__V1__State *ea = snapshot_of(ca, wa), *eb = snapshot_of(cb, wb),
                       *ef = snapshot_of(cb, fb);
    CHECK(ea && eb && ef && ea->snapshot.len == eb->snapshot.len &&
              memcmp(ea->snapshot.data, eb->snapshot.data, ea->snapshot.len) == 0 &&
              ea->snapshot.len == ef->snapshot.len &&
              memcmp(ea->snapshot.data, ef->snapshot.data, ea->snapshot.len) == 0,
          "A's world and B's restore and fork step on bit-identically");
    rsc_free(ea);
    rsc_free(eb);
    rsc_free(ef);
    rsc_free(sa);
    rsc_close(&ca);
    rsc_close(&cb);
    rsc_close(&cc);
    server_stop(&a);
    server_stop(&b);
    server_stop(&c);

    server_proc_t bad;
    const char *open_args[] = {"--snapshot-key-file", open_key, NULL};
    CHECK(server_start(&bad, binary, open_args) < 0, "a key file others can read is refused");
    server_stop(&bad);
    const char *short_args[] = {"--snapshot-key-file", short_key, NULL};
    CHECK(server_start(&bad, binary, short_args) < 0, "a key file of 20 bytes is refused");
    server_stop(&bad);
    unlink(key);
    unlink(other);
    unlink(open_key);
    unlink(short_key);
}

static void fork_limit(const char *binary)
{
    const char *extra[] = {"--max-worlds", "2", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --max-worlds 2");
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(sp.endpoint, 3000, &err);
    uint64_t a = 0, b = 0;
    int rc = rsc_fork_world(c, 1, NULL, 0, &a, &err);
    CHECK(rc == 0 && a == 2, "fork world 1 (anyone may): %d %s", rc, err.message);
    rc = rsc_fork_world(c, 1, NULL, 0, &b, &err);
    CHECK(rc == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "--max-worlds"),
          "a fork beyond the limit: %d %s", rc, err.message);
    rc = rsc_step(c, a, 2, 0, NULL, 0, NULL, &err);
    CHECK(rc == 0, "the forker controls the fork of world 1: %s", err.message);
    rsc_close(&c);
    server_stop(&sp);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    CHECK(server_start(&server, binary, NULL) == 0, "server did not start on %s",
          server.endpoint);
    if (server.pid <= 0)
        return rs_test_done("test_snapshot_net");
    rsc_client_t *c = client_of(server.endpoint, 5000);
    Robosim__V1__HelloReply *h = NULL;
    rsc_error_t err;
    rsc_hello(c, 1, 0, &h, &err);
    for (size_t i = 0; h && i < h->n_presets; i++)
        preset_roundtrip(c, h->presets[i]);
    rsc_free(h);
    rsc_close(&c);
    bad_snapshots();
    CHECK(server_stop(&server) == 0, "server exits 0 on SIGTERM");
    fork_limit(binary);
    shared_keys(binary);
    return rs_test_done("test_snapshot_net");
}
