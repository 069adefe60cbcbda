/* --state-dir through the real server: worlds (workshop, finger, a task world) survive kill -9
 * as of their last checkpoint, with the same ids and tokens, and step on bit-identically; a
 * SIGTERM loses nothing; world ids are never reused; destroyed worlds stay destroyed; damaged
 * files are set aside (*.bad) and the server starts anyway; the dir is 0700, its files 0600.
 * Restored worlds keep their owner (the quota counts them; --world-ttl expires them), version 1
 * files included. The dir is refused unless it is the server user's and writable by it alone;
 * a junk name cannot wrap the id counter, a file whose id is not its name's is set aside, a
 * FIFO is skipped, and a link planted as a temporary file is not followed. */
#include "core/snapshot_bytes.h"
#include "rs_codec.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "rs_test.h"
#include "server_internal.h"
#include "server_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

static const char *binary;
static char state_dir[256];
static server_proc_t server;

#define NW 3            /* worlds followed: workshop (1), finger, FingerPush-v0 */
#define PROGRAM 8       /* control steps of the recorded program */
#define TASK "FingerPush-v0"

static uint64_t ids[NW];
static int is_task[NW];
static char tokens[NW][RS_TOKEN_LEN + 1];

static void start(const char *interval)
{
    const char *extra[] = {"--state-dir", state_dir, "--checkpoint-interval", interval, NULL};
    int rc = server_start(&server, binary, extra);
    CHECK(rc == 0, "server with --state-dir %s did not start", state_dir);
    if (rc != 0)
        exit(1);
}

static void kill9(void)
{
    kill(server.pid, SIGKILL);
    waitpid(server.pid, NULL, 0);
    server.pid = -1;
}

static rsc_client_t *connect_with_tokens(void)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(server.endpoint, 10000, &err);
    CHECK(c != NULL, "connect: %s", err.message);
    if (!c)
        exit(1);
    for (int i = 0; i < NW; i++)
        if (tokens[i][0])
            rsc_set_world_token(c, ids[i], tokens[i]);
    return c;
}

/* A world's State as bytes, without the stream sequence number (a restarted server counts
 * its frames afresh). NULL when the world cannot be read. */
static unsigned char *state_bytes(rsc_client_t *c, uint64_t id, size_t *n)
{
    Robosim__V1__State *s = NULL;
    rsc_error_t err;
    *n = 0;
    if (rsc_get_state(c, id, &s, &err) != 0)
        return NULL;
    s->seq = 0;
    *n = robosim__v1__state__get_packed_size(s);
    unsigned char *b = malloc(*n);
    robosim__v1__state__pack(s, b);
    rsc_free(s);
    return b;
}

static int same(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
    return a && b && na == nb && memcmp(a, b, na) == 0;
}

/* Step k of a fixed program on world i (one control step; commands or the task's action vary
 * with k). 0 or the error code. */
static int drive(rsc_client_t *c, int i, int k)
{
    rsc_error_t err;
    rsc_batch_item_t item = {.world_id = ids[i], .steps = 1};
    double action[1] = {0.4 * sin(0.9 * k)};
    double f[1] = {k % 3 ? 30.0 : -12.0}, arm[2] = {0.2 + 0.1 * sin(k), 0.1 * cos(k)};
    rsc_command_t cmds[2] = {{"finger", f, 1}, {"arm", arm, 2}};
    if (is_task[i]) {
        item.action = action;
        item.naction = 1;
    } else {
        item.cmds = cmds;
        item.ncmds = i == 0 ? 2 : 1; /* the workshop has an arm, the finger world not */
    }
    Robosim__V1__StepBatchReply *r = NULL;
    int rc = rsc_step_batch(c, &item, 1, &r, &err);
    if (rc == 0 && r->results[0]->result_case != ROBOSIM__V1__BATCH_RESULT__RESULT_STATE)
        rc = (int)r->results[0]->error->code;
    if (rc && rc != ROBOSIM__V1__ERROR_CODE__PERMISSION_DENIED)
        fprintf(stderr, "drive world %llu step %d: %d %s\n", (unsigned long long)ids[i], k, rc,
                rc == 0 ? "" : (r && r->results[0]->error ? r->results[0]->error->message : err.message));
    rsc_free(r);
    return rc;
}

static char *world_path(uint64_t id, const char *suffix)
{
    static char p[2][512];
    static int which;
    which ^= 1;
    snprintf(p[which], sizeof p[which], "%s/world-%llu.rsw%s", state_dir, (unsigned long long)id,
             suffix);
    return p[which];
}

/* Whether world i's file holds the server's state now: its snapshot, restored in-process,
 * gives the State the server gives, bit for bit. The parsed file in *pw (its snapshot points
 * into a static buffer). 1, 0, or -1 when the file cannot be read or parsed. */
static int file_matches(rsc_client_t *c, int i, rs_persisted_world_t *pw)
{
    static unsigned char buf[1 << 16];
    FILE *f = fopen(world_path(ids[i], ""), "rb");
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    rs_status_t st;
    if (!f || rs_persist_parse_world(buf, len, pw, &st) < 0)
        return -1;
    rs_world_t *w = pw->task[0] ? rs_world_new_task(pw->task, NULL, NULL, 0, 0, &st)
                                : rs_world_new(pw->preset, NULL, 0, 0, &st);
    if (!w || rs_snapshot_read(w, pw->snapshot, pw->snapshot_len, &st) < 0) {
        rs_world_destroy(&w);
        return -1;
    }
    rs_arena_t a;
    rs_arena_init(&a, 1 << 16);
    Robosim__V1__State *mine = rs_codec_state(&a, ids[i], w);
    size_t n1 = robosim__v1__state__get_packed_size(mine), n2 = 0;
    unsigned char *b1 = malloc(n1), *b2 = state_bytes(c, ids[i], &n2);
    robosim__v1__state__pack(mine, b1);
    int ok = same(b1, n1, b2, n2);
    free(b1);
    free(b2);
    rs_arena_free(&a);
    rs_world_destroy(&w);
    return ok;
}

/* Wait until a checkpoint holds every followed world as the server has it now, and world
 * `gone`'s file (0: none) is removed. 0, or -1 after 30 s. */
static int wait_checkpoint(rsc_client_t *c, uint64_t gone)
{
    for (int tries = 0; tries < 3000; tries++) {
        struct stat sb;
        int done = !gone || stat(world_path(gone, ""), &sb) != 0;
        for (int i = 0; i < NW && done; i++) {
            rs_persisted_world_t pw;
            done = file_matches(c, i, &pw) == 1;
        }
        if (done)
            return 0;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

static uint64_t create(rsc_client_t *c, const char *preset, const char *task)
{
    rsc_error_t err;
    uint64_t id = 0;
    int rc = task ? rsc_create_task_world(c, task, NULL, NULL, 0, 5, &id, &err)
                  : rsc_create_world(c, preset, NULL, 0, 5, &id, &err);
    CHECK(rc == 0, "create %s: %s", task ? task : preset, err.message);
    return id;
}

/* The world ids the server lists, ascending, in out[] (at most 16); their number. */
static int list_ids(rsc_client_t *c, uint64_t *out, double *lease1)
{
    Robosim__V1__ListWorldsReply *r = NULL;
    rsc_error_t err;
    if (rsc_list_worlds(c, &r, &err) != 0)
        return -1;
    int n = 0;
    for (size_t i = 0; i < r->n_worlds && n < 16; i++) {
        out[n++] = r->worlds[i]->world_id;
        if (r->worlds[i]->world_id == 1 && lease1)
            *lease1 = r->worlds[i]->lease_remaining;
    }
    rsc_free(r);
    return n;
}

static int listed(const uint64_t *l, int n, uint64_t id)
{
    for (int i = 0; i < n; i++)
        if (l[i] == id)
            return 1;
    return 0;
}

static int mode_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int)(sb.st_mode & 0777) : -1;
}

/* ---- the state dir's own rules, each on a fresh dir under `base` ---- */

/* Run the server with `extra` (NULL-terminated) and its output in out[n]; its exit status, or -1
 * when it was still running after 10 s (then killed). */
static int run_server(const char *const *extra, char *out, size_t n)
{
    const char *argv[24] = {binary, "--no-stream", "--log-level", "warn"};
    int argc = 4;
    char bind[64];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", free_port());
    argv[argc++] = "--bind";
    argv[argc++] = bind;
    for (int i = 0; extra[i] && argc < 23; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    return run_capture(argv, out, n, 1);
}

static void make_dir(char *dir, size_t n, const char *base, const char *name)
{
    snprintf(dir, n, "%s/%s", base, name);
    CHECK(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));
}

static int start_on(const char *dir, const char *const *more)
{
    const char *extra[16] = {"--state-dir", dir, "--checkpoint-interval", "0.1"};
    int n = 4;
    for (int i = 0; more && more[i] && n < 15; i++)
        extra[n++] = more[i];
    extra[n] = NULL;
    int rc = server_start(&server, binary, extra);
    if (rc != 0 && server.pid > 0)
        server_stop(&server); /* came up too slowly: not left running */
    return rc;
}

static int has_world(rsc_client_t *c, uint64_t id)
{
    Robosim__V1__State *st = NULL;
    rsc_error_t err;
    int rc = rsc_get_state(c, id, &st, &err);
    rsc_free(st);
    return rc == 0;
}

/* The bytes of dir/name (at most 1 MiB) in a malloc'd buffer; its length in *len. */
static uint8_t *slurp(const char *dir, const char *name, size_t *len)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    uint8_t *buf = malloc(1 << 20);
    *len = f ? fread(buf, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    return buf;
}

static void spew(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, len, f) == len, "write %s", path);
    if (f)
        fclose(f);
}

/* A dir others may write to, or another user's, is refused at start-up, saying what to do. */
static void dir_owner_and_mode(const char *base)
{
    char dir[300], out[4096];
    make_dir(dir, sizeof dir, base, "open");
    chmod(dir, 0770);
    const char *extra[] = {"--state-dir", dir, NULL};
    int rc = run_server(extra, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "writable by its group") && strstr(out, "chmod 700"),
          "a group-writable state dir is refused: exit %d:\n%s", rc, out);
    chmod(dir, 0703);
    rc = run_server(extra, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "writable by others"),
          "a world-writable state dir is refused: exit %d:\n%s", rc, out);
    chmod(dir, 0700);
    if (geteuid() == 0) { /* only root can give the dir away */
        CHECK(chown(dir, 65534, 65534) == 0, "chown: %s", strerror(errno));
        rc = run_server(extra, out, sizeof out);
        CHECK(rc == 1 && strstr(out, "belongs to uid 65534") && strstr(out, "chown"),
              "another user's state dir is refused: exit %d:\n%s", rc, out);
    } else {
        printf("not root: another user's state dir not tried\n");
    }
}

/* A junk name with a huge id does not wrap the id counter: ids handed out before and after a
 * restart are distinct, in range and growing, and the first world survives the restart. */
static void junk_name(const char *base)
{
    char dir[300];
    make_dir(dir, sizeof dir, base, "junk");
    spew(dir, "world-18446744073709551615.junk", (const uint8_t *)"junk", 4);
    const char *nw[] = {"--no-world", NULL};
    CHECK(start_on(dir, nw) == 0, "start on a dir with a junk file");
    rsc_client_t *c = connect_with_tokens();
    uint64_t a = create(c, "finger", NULL);
    rsc_close(&c);
    server_stop(&server);
    CHECK(start_on(dir, nw) == 0, "restart on a dir with a junk file");
    c = connect_with_tokens();
    uint64_t b = create(c, "finger", NULL);
    CHECK(a >= 1 && b > a && b < (UINT64_C(1) << 53) && has_world(c, a),
          "ids %llu then %llu after a restart (distinct, growing, world %llu still there)",
          (unsigned long long)a, (unsigned long long)b, (unsigned long long)a);
    rsc_close(&c);
    server_stop(&server);
}

/* A file holding another id than its name's is set aside; the table stays sorted (every
 * world is found, a new one too). */
static void id_name_mismatch(const char *base)
{
    char dir[300], name[64], bad[400];
    make_dir(dir, sizeof dir, base, "mismatch");
    const char *nw[] = {"--no-world", NULL};
    CHECK(start_on(dir, nw) == 0, "start");
    rsc_client_t *c = connect_with_tokens();
    uint64_t keep = create(c, "finger", NULL), moved = create(c, "finger", NULL);
    rsc_close(&c);
    CHECK(server_stop(&server) == 0, "SIGTERM");
    snprintf(name, sizeof name, "world-%llu.rsw", (unsigned long long)moved);
    size_t len;
    uint8_t *buf = slurp(dir, name, &len);
    CHECK(len > 32, "%s written", name);
    for (int i = 0; i < 8; i++) /* the id field: 5000, and the checksum to match */
        buf[16 + i] = (uint8_t)((uint64_t)5000 >> (8 * i));
    reseal(buf, len);
    spew(dir, name, buf, len);
    free(buf);
    CHECK(start_on(dir, nw) == 0, "restart");
    c = connect_with_tokens();
    uint64_t fresh = create(c, "finger", NULL);
    snprintf(bad, sizeof bad, "%s/%s.bad", dir, name);
    struct stat sb;
    CHECK(has_world(c, keep) && has_world(c, fresh) && !has_world(c, 5000) &&
              !has_world(c, moved) && stat(bad, &sb) == 0,
          "world %llu and the new %llu found, the file naming %llu but holding 5000 set aside",
          (unsigned long long)keep, (unsigned long long)fresh, (unsigned long long)moved);
    rsc_close(&c);
    server_stop(&server);
}

/* A FIFO named like a world file is skipped (start-up does not wait on it) and left alone, by
 * the checkpoints' sweep of files of worlds gone too. */
static void fifo(const char *base)
{
    char dir[300], path[400];
    make_dir(dir, sizeof dir, base, "fifo");
    snprintf(path, sizeof path, "%s/world-9.rsw", dir);
    CHECK(mkfifo(path, 0600) == 0, "mkfifo: %s", strerror(errno));
    CHECK(start_on(dir, NULL) == 0, "a server starts beside a FIFO named world-9.rsw");
    if (server.pid <= 0)
        return;
    rsc_client_t *c = connect_with_tokens();
    /* a world of its own, so that checkpoints run (and sweep the files of worlds gone) */
    uint64_t id = create(c, "finger", NULL);
    char own[400];
    snprintf(own, sizeof own, "%s/world-%llu.rsw", dir, (unsigned long long)id);
    struct stat sb;
    for (int i = 0; i < 300 && stat(own, &sb) != 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL); /* three checkpoint intervals */
    CHECK(stat(own, &sb) == 0, "the new world %llu checkpointed", (unsigned long long)id);
    CHECK(!has_world(c, 9) && lstat(path, &sb) == 0 && S_ISFIFO(sb.st_mode),
          "no world 9, the FIFO where it was after checkpoints");
    rsc_close(&c);
    server_stop(&server);
}

/* A link planted where the next checkpoint writes its temporary file is not followed: the
 * file it points at is unchanged, the world's file is a regular file again. */
static void planted_link(const char *base)
{
    char dir[300], victim[400], tmp[420], path[400];
    make_dir(dir, sizeof dir, base, "link");
    snprintf(victim, sizeof victim, "%s/victim", base);
    spew(base, "victim", (const uint8_t *)"precious", 8);
    const char *nw[] = {"--no-world", NULL};
    CHECK(start_on(dir, nw) == 0, "start");
    rsc_client_t *c = connect_with_tokens();
    uint64_t id = create(c, "finger", NULL);
    snprintf(path, sizeof path, "%s/world-%llu.rsw", dir, (unsigned long long)id);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct stat sb;
    for (int i = 0; i < 300 && stat(path, &sb) != 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    CHECK(symlink(victim, tmp) == 0, "symlink: %s", strerror(errno));
    Robosim__V1__State *st = NULL;
    rsc_error_t err;
    CHECK(rsc_step(c, id, 3, 0, NULL, 0, &st, &err) == 0, "step: %s", err.message);
    rsc_free(st);
    rsc_close(&c);
    CHECK(server_stop(&server) == 0, "SIGTERM (its final checkpoint writes the world)");
    size_t len;
    uint8_t *v = slurp(base, "victim", &len);
    CHECK(len == 8 && !memcmp(v, "precious", 8), "the linked file is unchanged (%zu bytes)", len);
    free(v);
    CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 8,
          "the world's file is a regular file of its own");
}

/* Restored worlds are their owner's: they count against its quota, and --world-ttl expires
 * them; a version 1 file (no owner field) is still read, and its world expires too. */
static void restored_owner(const char *base)
{
    char dir[300];
    make_dir(dir, sizeof dir, base, "owner");
    const char *quota[] = {"--no-world", "--max-worlds-per-client", "2", NULL};
    CHECK(start_on(dir, quota) == 0, "start");
    rsc_client_t *c = connect_with_tokens();
    uint64_t a = create(c, "finger", NULL), b = create(c, "finger", NULL), more = 0;
    rsc_close(&c);
    CHECK(server_stop(&server) == 0, "SIGTERM");
    /* world b's file as version 1 wrote it: no owner field */
    char name[64];
    snprintf(name, sizeof name, "world-%llu.rsw", (unsigned long long)b);
    size_t len;
    uint8_t *buf = slurp(dir, name, &len);
    const size_t owner_at = 32 + 2 * RS_TOKEN_LEN + 2 * 32, owner_len = 80;
    CHECK(len > owner_at + owner_len + 16 && buf[8] == 2, "a version 2 file (%zu bytes)", len);
    memmove(buf + owner_at, buf + owner_at + owner_len, len - owner_at - owner_len);
    len -= owner_len;
    buf[8] = 1;
    reseal(buf, len);
    spew(dir, name, buf, len);
    free(buf);

    CHECK(start_on(dir, quota) == 0, "restart");
    c = connect_with_tokens();
    rsc_error_t err;
    int rc = rsc_create_world(c, "finger", NULL, 0, 1, &more, &err);
    CHECK(has_world(c, a) && has_world(c, b), "both worlds restored (one from a version 1 file)");
    CHECK(rc == 0, "the version 1 world counts against nobody: %s", err.message);
    rc = rsc_create_world(c, "finger", NULL, 0, 1, &more, &err);
    CHECK(rc == ROBOSIM__V1__ERROR_CODE__RESOURCE_EXHAUSTED &&
              strstr(err.message, "--max-worlds-per-client 2"),
          "the restored world counts against its owner's quota: %d %s", rc, err.message);
    rsc_close(&c);
    CHECK(server_stop(&server) == 0, "SIGTERM");

    const char *ttl[] = {"--no-world", "--world-ttl", "1", NULL};
    CHECK(start_on(dir, ttl) == 0, "restart with --world-ttl 1");
    c = connect_with_tokens();
    int left = 3;
    for (int i = 0; i < 60 && left; i++) {
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        left = has_world(c, a) + has_world(c, b) + has_world(c, more);
    }
    CHECK(left == 0, "restored worlds expire under --world-ttl: %d left after 6 s", left);
    rsc_close(&c);
    server_stop(&server);
}

int main(int argc, char **argv)
{
    binary = server_arg(argc, argv);
    char base[] = "/tmp/robosim-persist-XXXXXX";
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(state_dir, sizeof state_dir, "%s/state", base); /* the server creates it */
    rsc_error_t err;

    /* ---- run 1: worlds, a periodic checkpoint, a recorded program, kill -9 ---- */
    start("0.2");
    CHECK(mode_of(state_dir) == 0700, "state dir mode %03o, want 700", mode_of(state_dir));
    rsc_client_t *c = connect_with_tokens();
    Robosim__V1__CreateWorldReply *cr = NULL;
    CHECK(rsc_claim(c, 1, &cr, &err) == 0, "claim world 1: %s", err.message);
    rsc_free(cr);
    ids[0] = 1;
    ids[1] = create(c, "finger", NULL);
    ids[2] = create(c, NULL, TASK);
    is_task[2] = 1;
    uint64_t doomed = create(c, "finger", NULL);
    for (int i = 0; i < NW; i++) {
        snprintf(tokens[i], sizeof tokens[i], "%s", rsc_world_token(c, ids[i]) ? rsc_world_token(c, ids[i]) : "");
        CHECK(strlen(tokens[i]) == RS_TOKEN_LEN, "no token for world %llu", (unsigned long long)ids[i]);
        for (int k = 0; k < 3; k++)
            CHECK(drive(c, i, k) == 0, "warm-up step %d of world %d", k, i);
    }
    CHECK(rsc_destroy_world(c, doomed, &err) == 0, "destroy: %s", err.message);
    CHECK(wait_checkpoint(c, doomed) == 0,
          "no checkpoint of the worlds as they are (and without the destroyed one) within 30 s");
    struct stat sb;
    CHECK(mode_of(world_path(ids[1], "")) == 0600, "world file mode %03o, want 600",
          mode_of(world_path(ids[1], "")));

    /* the files hold what the server had: id, token, preset and task, and (wait_checkpoint) a
     * snapshot the core restores into a world whose State is the server's, bit for bit */
    for (int i = 0; i < NW; i++) {
        rs_persisted_world_t pw;
        CHECK(file_matches(c, i, &pw) == 1, "world %llu's file", (unsigned long long)ids[i]);
        CHECK(pw.id == ids[i] && !strcmp(pw.token, tokens[i]), "file of world %llu: id %llu token %s",
              (unsigned long long)ids[i], (unsigned long long)pw.id, pw.token);
        CHECK(!strcmp(pw.task, is_task[i] ? TASK : ""), "task '%s'", pw.task);
        CHECK(!strcmp(pw.preset, i == 0 ? "workshop" : "finger"), "preset '%s'", pw.preset);
    }

    /* only changed worlds are written: step the finger world alone, wait for its file to be
     * rewritten, and the others' files are as they were */
    struct stat shop0, task0, st1;
    stat(world_path(ids[0], ""), &shop0);
    stat(world_path(ids[2], ""), &task0);
    CHECK(drive(c, 1, 50) == 0, "finger step");
    CHECK(wait_checkpoint(c, 0) == 0, "the changed world's file was not rewritten within 30 s");
    stat(world_path(ids[0], ""), &st1);
    CHECK(st1.st_mtim.tv_sec == shop0.st_mtim.tv_sec && st1.st_mtim.tv_nsec == shop0.st_mtim.tv_nsec,
          "an unchanged world's file was rewritten");
    stat(world_path(ids[2], ""), &st1);
    CHECK(st1.st_mtim.tv_sec == task0.st_mtim.tv_sec && st1.st_mtim.tv_nsec == task0.st_mtim.tv_nsec,
          "an unchanged task world's file was rewritten");

    /* the program from the checkpointed state on, every state recorded (checkpoints may run
     * meanwhile: the restored world is then at a later point of the program) */
    unsigned char *rec[NW][PROGRAM + 1];
    size_t reclen[NW][PROGRAM + 1];
    for (int i = 0; i < NW; i++) {
        rec[i][0] = state_bytes(c, ids[i], &reclen[i][0]);
        for (int k = 1; k <= PROGRAM; k++) {
            CHECK(drive(c, i, 100 + k) == 0, "program step %d of world %d", k, i);
            rec[i][k] = state_bytes(c, ids[i], &reclen[i][k]);
        }
    }
    uint64_t late = create(c, "finger", NULL); /* handed out after the checkpoint */
    rsc_close(&c);
    kill9();

    /* ---- run 2: every world back as of its last checkpoint, stepping on bit-identically ---- */
    start("0.2");
    c = connect_with_tokens();
    uint64_t l[16];
    double lease1 = -1;
    int nl = list_ids(c, l, &lease1);
    for (int i = 0; i < NW; i++)
        CHECK(listed(l, nl, ids[i]), "world %llu not restored", (unsigned long long)ids[i]);
    CHECK(!listed(l, nl, doomed), "destroyed world %llu came back", (unsigned long long)doomed);
    CHECK(lease1 > 0 && lease1 <= 30.0, "world 1's lease after restart: %g s (claimed, 30 s)", lease1);
    int continued = 0;
    for (int i = 0; i < NW; i++) {
        size_t n;
        unsigned char *now = state_bytes(c, ids[i], &n);
        int at = -1;
        for (int k = PROGRAM; k >= 0 && at < 0; k--)
            if (same(now, n, rec[i][k], reclen[i][k]))
                at = k;
        free(now);
        CHECK(at >= 0, "world %llu restored to a state the program never passed through",
              (unsigned long long)ids[i]);
        for (int k = at + 1; at >= 0 && k <= PROGRAM; k++) {
            CHECK(drive(c, i, 100 + k) == 0, "restored world %d step %d (token kept)", i, k);
            now = state_bytes(c, ids[i], &n);
            CHECK(same(now, n, rec[i][k], reclen[i][k]),
                  "world %llu step %d after restart differs from the original run",
                  (unsigned long long)ids[i], k);
            free(now);
            continued++;
        }
    }
    printf("after kill -9: %d control steps compared with the original run\n", continued);
    uint64_t fresh = create(c, "finger", NULL);
    CHECK(fresh > late, "new world id %llu after restart, but %llu was handed out before the kill",
          (unsigned long long)fresh, (unsigned long long)late);
    /* a wrong token is still refused */
    rsc_set_world_token(c, ids[1], "00000000000000000000000000000000");
    CHECK(drive(c, 1, 0) == ROBOSIM__V1__ERROR_CODE__PERMISSION_DENIED, "a wrong token was accepted");
    rsc_set_world_token(c, ids[1], tokens[1]);
    rsc_destroy_world(c, fresh, &err);

    /* ---- SIGTERM loses nothing ---- */
    for (int i = 0; i < NW; i++)
        CHECK(drive(c, i, 300) == 0, "step before SIGTERM");
    unsigned char *before[NW];
    size_t beforelen[NW];
    for (int i = 0; i < NW; i++)
        before[i] = state_bytes(c, ids[i], &beforelen[i]);
    int nbefore = list_ids(c, l, NULL);
    rsc_close(&c);
    CHECK(server_stop(&server) == 0, "SIGTERM: the server did not exit cleanly");
    start("1000"); /* no periodic checkpoint from here on: only the one at SIGTERM counts */
    c = connect_with_tokens();
    uint64_t l2[16];
    CHECK(list_ids(c, l2, NULL) == nbefore && !memcmp(l, l2, (size_t)nbefore * sizeof l[0]),
          "the worlds listed after SIGTERM and restart differ");
    for (int i = 0; i < NW; i++) {
        size_t n;
        unsigned char *now = state_bytes(c, ids[i], &n);
        CHECK(same(now, n, before[i], beforelen[i]), "world %llu changed across SIGTERM",
              (unsigned long long)ids[i]);
        free(now);
    }

    /* ---- kill -9 with no checkpoint since the SIGTERM one: back to exactly that state, and
     * the same program gives the same states ---- */
    unsigned char *again[NW][PROGRAM + 1];
    size_t againlen[NW][PROGRAM + 1];
    for (int i = 0; i < NW; i++)
        for (int k = 1; k <= PROGRAM; k++) {
            CHECK(drive(c, i, 200 + k) == 0, "program 2 step %d", k);
            again[i][k] = state_bytes(c, ids[i], &againlen[i][k]);
        }
    rsc_close(&c);
    kill9();
    /* damaged files next to the good ones */
    FILE *f = fopen(world_path(77, ""), "wb");
    fputs("not a world", f);
    fclose(f);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "head -c 300 %s > %s", world_path(ids[1], ""), world_path(78, ""));
    CHECK(system(cmd) == 0, "%s", cmd);
    start("1000");
    c = connect_with_tokens();
    nl = list_ids(c, l, NULL);
    CHECK(!listed(l, nl, 77) && !listed(l, nl, 78), "a damaged world file was restored");
    CHECK(stat(world_path(77, ".bad"), &sb) == 0 && stat(world_path(78, ".bad"), &sb) == 0,
          "damaged files not set aside as *.bad");
    for (int i = 0; i < NW; i++) {
        size_t n;
        unsigned char *now = state_bytes(c, ids[i], &n);
        CHECK(same(now, n, before[i], beforelen[i]), "world %llu not at its SIGTERM checkpoint",
              (unsigned long long)ids[i]);
        free(now);
        for (int k = 1; k <= PROGRAM; k++) {
            CHECK(drive(c, i, 200 + k) == 0, "program 2 again, step %d", k);
            now = state_bytes(c, ids[i], &n);
            CHECK(same(now, n, again[i][k], againlen[i][k]),
                  "world %llu step %d after kill -9 differs from the run before it",
                  (unsigned long long)ids[i], k);
            free(now);
        }
    }
    fresh = create(c, "finger", NULL);
    CHECK(fresh > 78, "new world id %llu reuses an id seen in the state dir", (unsigned long long)fresh);
    rsc_close(&c);
    server_stop(&server);

    /* more worlds in the dir than --max-worlds: the server refuses to start (it must not drop
     * worlds, nor delete their files at its first checkpoint) */
    const char *few[] = {"--state-dir", state_dir, "--max-worlds", "2", NULL};
    CHECK(server_start(&server, binary, few) != 0, "a server with too few world slots started");
    CHECK(stat(world_path(ids[2], ""), &sb) == 0, "a world file went missing");

    /* a second server on the same state dir is refused while the first runs */
    start("1000");
    server_proc_t first = server;
    const char *extra[] = {"--state-dir", state_dir, NULL};
    CHECK(server_start(&server, binary, extra) != 0, "two servers share one state dir");
    server = first;
    server_stop(&server);

    for (int i = 0; i < NW; i++) {
        free(before[i]);
        for (int k = 0; k <= PROGRAM; k++) {
            free(rec[i][k]);
            if (k)
                free(again[i][k]);
        }
    }
    dir_owner_and_mode(base);
    junk_name(base);
    id_name_mismatch(base);
    fifo(base);
    planted_link(base);
    restored_owner(base);

    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    return rs_test_done("test_persist");
}
