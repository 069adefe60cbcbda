/* --state-dir: the server's worlds on disk, checkpointed atomically, so a restart loses nothing
 * (the file formats and checkpoint rules: docs/design.md, "Rationale and measurements"). */
#include "persist_file.h"
#include "rs_data.h"
#include "rs_log.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "server_internal.h"
#include "worlds.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PART_SECONDS 0.002    /* the loop's time building one part of a checkpoint */

/* A checkpoint's work for the writer: the world files to write (images built by the loop) and
 * the worlds that exist (files of others are removed). */
typedef struct job_file {
    uint64_t id, mark;
    size_t off, len; /* the image in job.data */
} job_file_t;

typedef struct job {
    job_file_t *files;
    int nfiles, cap_files;
    uint8_t *data;
    size_t used, cap;
    uint64_t *live; /* ids of the worlds there are, sorted */
    int nlive, cap_live;
    uint64_t *failed; /* ids whose file could not be written (the loop writes them again) */
    int nfailed;
} job_t;

struct rs_persist {
    char dir[4096];
    int lock_fd;       /* the directory's lock (the one that opened it; -1 in a shard's) */
    struct rs_persist *dirp; /* the directory's owner: itself, or a shard's front's */
    /* the directory's owner: what its scan found, for the server or its shards to restore */
    uint64_t *found;   /* ids of the world files there, sorted */
    int nfound, cap_found;
    int held;          /* the dir held a server's state (world files or server.state) */
    uint64_t first_id; /* the first id new worlds may have */
    pthread_mutex_t ids_lock; /* its shards take ids and write server.state under it */
    rs_server_t **shards;     /* a front's: its shards, each added as it opens (their final
                                 checkpoints) */
    int nshards;
    /* a shard's: the census its files' owners are read from (NULL: one server) */
    struct rs_census *census;
    int shard;
    double next_due;   /* rs_monotonic() time of the next periodic checkpoint */
    uint64_t resume_id; /* a periodic checkpoint in parts goes on from this world id (0: none
                           under way) */
    uint64_t id_limit; /* as in server.state: ids below it may have been handed out */
    uint8_t *buf;      /* a world file being built */
    size_t cap;
    /* the writer thread: the loop hands it a job and goes on serving; a checkpoint's fsyncs
     * never hold up requests */
    pthread_t writer;
    int writer_started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int busy;          /* the job belongs to the writer */
    int stop;
    int last_rc;       /* the writer's last result */
    char last_error[256];
    job_t job;
};

static void *writer_main(void *arg);

/* The bytes w's world file takes at most (build_image). */
static size_t image_size(const world_slot_t *w)
{
    size_t n;
    rs_snapshot_size(w->world, &n);
    return WORLD_HEADER + n + 8;
}

/* Build w's world file in b (image_size(w) bytes); its length in *len, its checksum in *mark
 * (never 0). Reads w and the server's settings only (the final checkpoint builds several at
 * once). 0 or a negative code. */
static int build_image(rs_server_t *s, const world_slot_t *w, uint8_t *b, size_t cap,
                       size_t *len, uint64_t *mark, rs_status_t *st)
{
    size_t n = cap - WORLD_HEADER - 8;
    memset(b, 0, WORLD_HEADER);
    memcpy(b, WORLD_MAGIC, 8);
    rs_pfile_put_u32(b + 8, FILE_VERSION);
    rs_pfile_put_u64(b + 16, w->id);
    memcpy(b + 24, w->token, strnlen(w->token, RS_TOKEN_LEN));
    memcpy(b + 24 + RS_TOKEN_LEN, w->prev_token, strnlen(w->prev_token, RS_TOKEN_LEN));
    rs_pfile_put_f64(b + 24 + 2 * RS_TOKEN_LEN, rs_lease_remaining(s, w));
    const char *task = w->world->task ? w->world->task->name : "";
    memcpy(b + 32 + 2 * RS_TOKEN_LEN, w->world->model->preset,
           strnlen(w->world->model->preset, NAME_LEN - 1));
    memcpy(b + 32 + 2 * RS_TOKEN_LEN + NAME_LEN, task, strnlen(task, NAME_LEN - 1));
    memcpy(b + OWNER_AT, w->owner, strnlen(w->owner, OWNER_LEN - 1));
    rs_pfile_put_u64(b + WORLD_HEADER - 8, n);
    int rc = rs_snapshot_write(w->world, b + WORLD_HEADER, n, &n, st);
    if (rc < 0)
        return rc;
    *len = WORLD_HEADER + n + 8;
    uint64_t h = rs_snapshot_checksum(b, WORLD_HEADER + n);
    rs_pfile_put_u64(b + WORLD_HEADER + n, h);
    *mark = h ? h : 1; /* 0 means "never written" */
    return 0;
}

/* Build w's world file in p->buf; its length in *len, its checksum in *mark. 0 or a negative
 * code. */
static int build_world_file(rs_server_t *s, const world_slot_t *w, size_t *len, uint64_t *mark,
                            rs_status_t *st)
{
    struct rs_persist *p = s->persist;
    size_t need = image_size(w);
    if (need > p->cap) {
        uint8_t *grown = realloc(p->buf, need);
        if (!grown)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for a world file of %zu bytes", need);
        p->buf = grown;
        p->cap = need;
    }
    return build_image(s, w, p->buf, need, len, mark, st);
}

/* Restore one world file, named for world `name_id`, into its place in s->worlds. 0, or a
 * negative code with the reason in st (the file is then set aside by the caller). */
static int restore_world(rs_server_t *s, uint64_t name_id, const uint8_t *buf, size_t len,
                         rs_status_t *st)
{
    rs_persisted_world_t pw;
    int rc = rs_persist_parse_world(buf, len, &pw, st);
    if (rc < 0)
        return rc;
    if (pw.id != name_id)
        return rs_fail(st, RS_EINVAL, "it holds world %" PRIu64 " but is named for world %" PRIu64,
                       pw.id, name_id);
    if (rs_worlds_find(s, pw.id))
        return rs_fail(st, RS_EINVAL, "a second file for world %" PRIu64, pw.id);
    if (rs_worlds_total(s) >= s->cfg.max_worlds)
        return rs_fail(st, RS_EEXHAUSTED,
                       "the state dir holds more worlds than --max-worlds %d; raise it",
                       s->cfg.max_worlds);
    /* a shard: the world is its own from now on, for every shard's routing */
    if (s->census && rs_census_place(s->census, pw.id, s->shard_index) < 0)
        return rs_fail(st, RS_EEXHAUSTED,
                       "world %" PRIu64 ": no room in the shards' id table (ids up to %llu); "
                       "restore it with --shards 1", pw.id,
                       (unsigned long long)ID_CHUNKS << ID_CHUNK_BITS);
    rs_world_t *world = pw.task[0] ? rs_world_new_task(pw.task, pw.preset, NULL, 0, 0, st)
                                   : rs_world_new(pw.preset, NULL, 0, 0, st);
    if (!world)
        return st->code ? st->code : RS_EINTERNAL;
    if ((rc = rs_snapshot_read(world, pw.snapshot, pw.snapshot_len, st)) < 0) {
        rs_world_destroy(&world);
        return rc;
    }
    world_slot_t *slot = rs_worlds_insert(s, pw.id, world, pw.owner);
    memcpy(slot->token, pw.token, sizeof slot->token);
    memcpy(slot->prev_token, pw.prev_token, sizeof slot->prev_token);
    slot->lease_until = rs_monotonic() + pw.lease_remaining;
    /* --world-ttl goes on from the controller's last request (which renewed the lease), the
     * time the server was down not counted */
    double idle = s->cfg.lease_seconds - pw.lease_remaining;
    slot->sched.last_active = rs_monotonic() - (idle > 0 ? idle : 0);
    return 0;
}

/* ---- server.state --------------------------------------------------------------------------- */

static int write_server_state(struct rs_persist *p, uint64_t limit, rs_status_t *st)
{
    uint8_t b[32];
    memset(b, 0, sizeof b);
    memcpy(b, SERVER_MAGIC, 8);
    rs_pfile_put_u32(b + 8, SERVER_FILE_VERSION);
    rs_pfile_put_u64(b + 16, limit);
    rs_pfile_put_u64(b + 24, rs_snapshot_checksum(b, 24));
    int rc = rs_pfile_write_atomic(p->dir, SERVER_FILE, b, sizeof b, st);
    if (rc == 0 && (rc = rs_pfile_sync_dir(p->dir, st)) == 0)
        p->id_limit = limit;
    return rc;
}

/* The id limit server.state records, or 0 (set aside when damaged). */
static uint64_t read_server_state(const char *dir)
{
    rs_status_t st;
    size_t len;
    uint8_t *b = rs_pfile_read_all(dir, SERVER_FILE, &len, &st);
    if (!b)
        return 0;
    uint64_t limit = 0;
    if (len == 32 && memcmp(b, SERVER_MAGIC, 8) == 0 && rs_pfile_get_u32(b + 8) == SERVER_FILE_VERSION &&
        rs_snapshot_checksum(b, 24) == rs_pfile_get_u64(b + 24) && rs_pfile_get_u64(b + 16) <= ID_MAX + ID_BLOCK)
        limit = rs_pfile_get_u64(b + 16);
    else
        rs_pfile_set_aside(dir, SERVER_FILE, "not a robosim server state, or damaged");
    free(b);
    return limit;
}

/* ---- the public side ------------------------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Check, lock and scan the state dir (the one place that does: the server, or the front of
 * its shards): leftover temporary files removed, the world files' ids noted in p->found (by
 * id), the first id new worlds may have in p->first_id. 0 or a negative code. */
static int open_dir(struct rs_persist *p, const char *dir, rs_status_t *st)
{
    struct stat sb;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return rs_fail(st, RS_EPRECOND, "cannot create the state dir %s: %s", dir, strerror(errno));
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return rs_fail(st, RS_EPRECOND, "--state-dir %s is not a directory", dir);
    /* another user who can write here can plant links and files the server would follow,
     * overwrite or restore */
    if (sb.st_uid != geteuid())
        return rs_fail(st, RS_EPRECOND,
                       "--state-dir %s belongs to uid %u, not to the user this server runs as "
                       "(uid %u): chown it to that user, or choose a directory of its own",
                       dir, (unsigned)sb.st_uid, (unsigned)geteuid());
    if (sb.st_mode & 022)
        return rs_fail(st, RS_EPRECOND,
                       "--state-dir %s is writable by %s (mode %03o): other users could replace "
                       "its files; chmod 700 it",
                       dir, (sb.st_mode & 020) && (sb.st_mode & 002) ? "group and others"
                            : sb.st_mode & 020 ? "its group" : "others",
                       (unsigned)(sb.st_mode & 0777));
    if (sb.st_mode & 077)
        rs_log(RS_LOG_WARN, "state dir %s is readable by others (mode %03o): it holds controller "
               "tokens; chmod 700 it", dir, (unsigned)(sb.st_mode & 0777));
    /* one server per state dir: two would overwrite each other's worlds */
    char lock[PATH_BUF];
    snprintf(lock, sizeof lock, "%s/" LOCK_FILE, dir);
    p->lock_fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (p->lock_fd < 0)
        return rs_fail(st, RS_EPRECOND, "cannot open %s: %s", lock, strerror(errno));
    if (fstat(p->lock_fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        return rs_fail(st, RS_EPRECOND, "%s is not a regular file; remove it", lock);
    if (flock(p->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return rs_fail(st, RS_EPRECOND, "the state dir %s is in use by another robosim-server",
                       dir);

    DIR *d = opendir(dir);
    if (!d)
        return rs_fail(st, RS_EPRECOND, "cannot read the state dir %s: %s", dir, strerror(errno));
    uint64_t max_id = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        size_t nl = strlen(name);
        if (nl > 4 && !strcmp(name + nl - 4, ".tmp")) {
            /* a write the last run did not finish: the file it was replacing is intact */
            char path[PATH_BUF];
            snprintf(path, sizeof path, "%s/%s", dir, name);
            unlink(path);
            continue;
        }
        uint64_t any = rs_pfile_world_file_id(name, 1);
        if (!any && !strncmp(name, "world-", 6)) {
            rs_log(RS_LOG_WARN, "state dir: %s/%s is not named world-<id>.rsw with an id from 1 "
                   "to %" PRIu64 "; ignored", dir, name, ID_MAX);
            continue;
        }
        if (any > max_id)
            max_id = any; /* set-aside files' ids are not handed out again either */
        uint64_t id = rs_pfile_world_file_id(name, 0);
        if (!id)
            continue;
        char path[PATH_BUF];
        struct stat lsb;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (lstat(path, &lsb) != 0 || !S_ISREG(lsb.st_mode)) {
            rs_log(RS_LOG_WARN, "state dir: %s is not a regular file (a link, FIFO or other); "
                   "skipped, remove it", path);
            continue;
        }
        if (rs_pfile_reserve(&p->found, &p->cap_found, p->nfound + 1, sizeof *p->found) < 0) {
            closedir(d);
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
        }
        p->found[p->nfound++] = id;
        p->held = 1;
    }
    closedir(d);
    if (p->nfound)
        qsort(p->found, (size_t)p->nfound, sizeof *p->found, by_id);
    uint64_t limit = read_server_state(dir);
    p->held |= limit != 0;
    /* after a damaged or missing server.state, stay clear of every id seen by a block */
    uint64_t next = limit ? limit : max_id ? max_id + ID_BLOCK : 1;
    if (next <= max_id)
        next = max_id + 1;
    p->first_id = next;
    p->id_limit = limit ? limit : 0;
    return 0;
}

/* Restore the found worlds that are server s's share (the k-th of every n, by id: shard k of
 * n, or all with n = 1); a file that cannot be restored is set aside. 0, or RS_EEXHAUSTED
 * when the worlds are more than --max-worlds. */
static int restore_share(rs_server_t *s, const struct rs_persist *d, int k, int n,
                         int *restored, int *failed, rs_status_t *st)
{
    *restored = *failed = 0;
    for (int i = k; i < d->nfound; i += n) {
        char name[64];
        snprintf(name, sizeof name, "world-%" PRIu64 ".rsw", d->found[i]);
        rs_status_t wst;
        rs_status_clear(&wst);
        size_t len;
        uint8_t *buf = rs_pfile_read_all(d->dir, name, &len, &wst);
        int rc = buf ? restore_world(s, d->found[i], buf, len, &wst) : wst.code;
        free(buf);
        if (rc == RS_EEXHAUSTED && rs_worlds_total(s) >= s->cfg.max_worlds)
            return rs_fail(st, RS_EEXHAUSTED, "%s", wst.message);
        if (rc < 0) {
            rs_pfile_set_aside(d->dir, name, wst.message);
            (*failed)++;
        } else {
            (*restored)++;
        }
    }
    return 0;
}

/* Start s's checkpoints: its worlds as their files hold them, the writer thread. */
static int start_writer(rs_server_t *s, struct rs_persist *p, rs_status_t *st)
{
    for (int i = 0; i < s->nworlds; i++) {
        s->worlds[i].ckpt.mark = 1; /* as its file holds it: nothing to write until it changes */
        s->worlds[i].ckpt.clean = 1;
    }
    p->next_due = rs_monotonic() + s->cfg.checkpoint_interval;
    if (rs_pfile_reserve(&p->job.live, &p->job.cap_live, s->nworlds, sizeof *p->job.live) < 0)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    for (int i = 0; i < s->nworlds; i++)
        p->job.live[p->job.nlive++] = s->worlds[i].id;
    if (pthread_create(&p->writer, NULL, writer_main, p) != 0)
        return rs_fail(st, RS_EEXHAUSTED, "cannot start the checkpoint writer thread");
    p->writer_started = 1;
    return 0;
}

int rs_persist_open(rs_server_t *s, rs_status_t *st)
{
    const char *dir = s->cfg.state_dir;
    struct rs_persist *p = calloc(1, sizeof *p);
    if (!p)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    p->lock_fd = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    pthread_mutex_init(&p->ids_lock, NULL);
    s->persist = p;
    if (strlen(dir) >= sizeof p->dir - 64)
        return rs_fail(st, RS_EINVAL, "--state-dir path is too long");
    snprintf(p->dir, sizeof p->dir, "%s", dir);
    int restored = 0, failed = 0, rc;
    if (s->front) {
        /* a shard: its share of the worlds its front found, spread by id over the shards; it
         * checkpoints them, its files only (the census says whose a file is) */
        struct rs_persist *d = s->front->persist;
        if (!d)
            return rs_fail(st, RS_EINTERNAL, "shard %d: its front has no state dir", s->shard_index);
        p->dirp = d;
        p->census = s->census;
        p->shard = s->shard_index;
        if (rs_pfile_reserve(&d->shards, &d->nshards, s->shard_index + 1, sizeof *d->shards) < 0)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
        d->shards[s->shard_index] = s;
        if ((rc = restore_share(s, d, s->shard_index, s->front->cfg.shards, &restored, &failed,
                                st)) < 0)
            return rc;
        rs_census_reserve_ids(s->census, d->first_id);
        if ((rc = start_writer(s, p, st)) < 0)
            return rc;
        if (d->held)
            rs_log(RS_LOG_INFO, "state dir %s: shard %d: %d world%s restored, %d set aside; new "
                   "worlds from id %" PRIu64, dir, s->shard_index, restored,
                   restored == 1 ? "" : "s", failed, d->first_id);
        return d->held;
    }
    p->dirp = p;
    if ((rc = open_dir(p, dir, st)) < 0)
        return rc;
    if (s->cfg.shards > 1)
        return p->held; /* a front: its shards restore the worlds and checkpoint them */
    if ((rc = restore_share(s, p, 0, 1, &restored, &failed, st)) < 0)
        return rc;
    s->next_world_id = p->first_id;
    if ((rc = start_writer(s, p, st)) < 0)
        return rc;
    if (p->held)
        rs_log(RS_LOG_INFO, "state dir %s: %d world%s restored, %d set aside; new worlds from id "
               "%" PRIu64, dir, restored, restored == 1 ? "" : "s", failed, p->first_id);
    else
        rs_log(RS_LOG_INFO, "state dir %s: empty, starting fresh", dir);
    return p->held;
}

/* Record in the state dir (server.state) that ids below id + ID_BLOCK may be handed out. 0, or
 * RS_EUNAVAIL saying no world may be created until it can. */
static int record_ids(struct rs_persist *d, uint64_t id, rs_status_t *st)
{
    int rc = write_server_state(d, id + ID_BLOCK, st);
    if (rc < 0) {
        char why[sizeof st->message];
        snprintf(why, sizeof why, "%s", st->message);
        rs_log(RS_LOG_ERROR, "%s", why);
        return rs_fail(st, RS_EUNAVAIL,
                       "the server cannot record world ids in its state dir (%s); no new "
                       "world until it can",
                       why);
    }
    return 0;
}

int rs_server_take_id(rs_server_t *s, uint64_t *id, rs_status_t *st)
{
    struct rs_persist *p = s->persist;
    if (s->census) {
        /* a shard: the shards' one sequence, recorded in the state dir by whichever shard
         * takes the first id past what server.state allows (under the dir's owner's lock) */
        struct rs_persist *d = p ? p->dirp : NULL;
        if (!d)
            return rs_worlds_take_id(s, id, st);
        pthread_mutex_lock(&d->ids_lock);
        int rc = rs_worlds_take_id(s, id, st);
        if (rc == 0 && *id >= d->id_limit)
            rc = record_ids(d, *id, st); /* the id is not handed out then, nor ever again */
        pthread_mutex_unlock(&d->ids_lock);
        return rc;
    }
    if (s->next_world_id > ID_MAX)
        return rs_fail(st, RS_EEXHAUSTED, "this server has handed out every world id (up to "
                       "%" PRIu64 "); start it with a fresh --state-dir", ID_MAX);
    if (p && s->next_world_id >= p->id_limit) {
        int rc = record_ids(p, s->next_world_id, st);
        if (rc < 0)
            return rc;
    }
    *id = s->next_world_id++;
    return 0;
}

/* Write file i of a job atomically; its result in rcs[i] (and in the log). */
typedef struct write_ctx {
    const char *dir;
    const job_t *job;
    int *rcs;
    rs_status_t *last;    /* the reason of a failure (any one) ... */
    pthread_mutex_t lock; /* ... written under it */
} write_ctx_t;

static void write_one(void *arg, size_t i, int worker)
{
    (void)worker;
    write_ctx_t *x = arg;
    const job_file_t *f = &x->job->files[i];
    char name[64];
    rs_status_t st;
    rs_status_clear(&st);
    snprintf(name, sizeof name, "world-%" PRIu64 ".rsw", f->id);
    x->rcs[i] = rs_pfile_write_atomic(x->dir, name, x->job->data + f->off, f->len, &st);
    if (x->rcs[i] < 0) {
        rs_log(RS_LOG_ERROR, "checkpoint of world %" PRIu64 " failed: %s", f->id, st.message);
        pthread_mutex_lock(&x->lock);
        *x->last = st;
        pthread_mutex_unlock(&x->lock);
    }
}

/* Threads that write the final checkpoint's files: their time is the disk's (each file's
 * fsync waits for it), so more of them than cores, and the file system gathers their fsyncs
 * into fewer journal commits. */
#define WRITERS_AT_STOP 16

typedef struct writers {
    write_ctx_t *x;
    atomic_size_t next; /* the next file to take */
    size_t n;
} writers_t;

static void *writer_thread(void *arg)
{
    writers_t *w = arg;
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n;)
        write_one(w->x, i, 0);
    return NULL;
}

/* write_one for files 0 .. n-1 on up to WRITERS_AT_STOP threads (this one among them). */
static void write_parallel(write_ctx_t *x, size_t n)
{
    writers_t w = {x, 0, n};
    pthread_t t[WRITERS_AT_STOP - 1];
    int started = 0;
    while (started < WRITERS_AT_STOP - 1 && (size_t)started + 1 < n &&
           pthread_create(&t[started], NULL, writer_thread, &w) == 0)
        started++;
    writer_thread(&w);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
}

/* Write a job's files (each atomically: written, fsync'd, renamed), remove the files of worlds
 * that are gone, fsync the directory. Runs on the writer thread, or on the loop's thread at a
 * final checkpoint (`at_stop`), which writes the files on several threads at once, so their
 * writes and fsyncs overlap; touches only the job and the directory. 0 or the last failure's
 * code (reason in st). */
static int run_job(const struct rs_persist *p, job_t *job, int at_stop, rs_status_t *st)
{
    const char *dir = p->dir;
    int rc = 0, dirty = 0;
    job->nfailed = 0;
    int *rcs = job->nfiles ? calloc((size_t)job->nfiles, sizeof *rcs) : NULL;
    write_ctx_t x = {dir, job, rcs, st, PTHREAD_MUTEX_INITIALIZER};
    if (rcs && at_stop && job->nfiles > 1)
        write_parallel(&x, (size_t)job->nfiles);
    else
        for (int i = 0; rcs && i < job->nfiles; i++)
            write_one(&x, (size_t)i, 0);
    if (job->nfiles && !rcs)
        rc = rs_fail(st, RS_EEXHAUSTED, "out of memory for a checkpoint");
    for (int i = 0; i < job->nfiles; i++) {
        if (!rcs || rcs[i] < 0) {
            job->failed[job->nfailed++] = job->files[i].id;
            rc = rcs ? rcs[i] : rc;
            continue;
        }
        dirty = 1;
    }
    free(rcs);
    pthread_mutex_destroy(&x.lock);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        uint64_t id = rs_pfile_world_file_id(de->d_name, 0);
        if (!id || bsearch(&id, job->live, (size_t)job->nlive, sizeof id, by_id))
            continue;
        if (p->census && rs_census_shard_of(p->census, id) != p->shard)
            continue; /* another shard's world */
        char path[PATH_BUF];
        struct stat lsb;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (lstat(path, &lsb) != 0 || !S_ISREG(lsb.st_mode))
            continue; /* a link, FIFO or other was never ours: left alone (start-up warned) */
        if (unlink(path) == 0)
            dirty = 1;
        else
            rs_log(RS_LOG_ERROR, "cannot remove %s: %s", path, strerror(errno));
    }
    if (d)
        closedir(d);
    if (dirty) {
        int drc = rs_pfile_sync_dir(dir, st);
        if (drc < 0)
            rc = drc;
    }
    if (job->nfiles - job->nfailed > 0)
        rs_log(RS_LOG_DEBUG, "checkpoint: %d world file%s written", job->nfiles - job->nfailed,
               job->nfiles - job->nfailed == 1 ? "" : "s");
    return rc;
}

static void *writer_main(void *arg)
{
    struct rs_persist *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->busy && !p->stop)
            pthread_cond_wait(&p->cond, &p->lock);
        if (!p->busy)
            break;
        pthread_mutex_unlock(&p->lock);
        rs_status_t st;
        rs_status_clear(&st);
        int rc = run_job(p, &p->job, 0, &st);
        pthread_mutex_lock(&p->lock);
        p->last_rc = rc;
        snprintf(p->last_error, sizeof p->last_error, "%s", st.message);
        p->busy = 0;
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Wait until the writer is idle; then the worlds whose file it could not write are marked
 * unwritten, so the next checkpoint writes them again. Returns the writer's last result. */
static int wait_writer(rs_server_t *s, rs_status_t *st)
{
    struct rs_persist *p = s->persist;
    pthread_mutex_lock(&p->lock);
    while (p->busy)
        pthread_cond_wait(&p->cond, &p->lock);
    int rc = p->last_rc;
    if (rc < 0)
        rs_fail(st, rc, "%s", p->last_error);
    p->last_rc = 0;
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->job.nfailed; i++) {
        world_slot_t *w = rs_worlds_find(s, p->job.failed[i]);
        if (w)
            w->ckpt.mark = 0, w->ckpt.clean = 0;
    }
    p->job.nfailed = 0;
    return rc;
}

/* The final checkpoint's images, built in parallel by the pool straight into the job's data:
 * world files[i] in its place there (its len and mark set), or rcs[i] < 0. */
typedef struct build_ctx {
    rs_server_t *s;
    job_t *job;
    world_slot_t **worlds; /* files[i]'s world */
    int *rcs;
} build_ctx_t;

static void build_one(void *arg, size_t i, int worker)
{
    (void)worker;
    build_ctx_t *x = arg;
    job_file_t *f = &x->job->files[i];
    rs_status_t st;
    rs_status_clear(&st);
    size_t len = 0;
    x->rcs[i] = build_image(x->s, x->worlds[i], x->job->data + f->off, f->len, &len, &f->mark,
                            &st);
    f->len = len;
    if (x->rcs[i] < 0)
        rs_log(RS_LOG_ERROR, "checkpoint of world %" PRIu64 " failed: %s", f->id, st.message);
}

/* build_job's whole pass on the pool (the loop's batches are over: the final checkpoint): the
 * images of the changed worlds built at once, each into its own place of the job's data.
 * The number of files, or a negative code. */
static int build_all(rs_server_t *s, job_t *job, rs_status_t *st)
{
    int n = s->nworlds, k = 0;
    world_slot_t **worlds = malloc((size_t)(n ? n : 1) * sizeof *worlds);
    int *rcs = calloc((size_t)(n ? n : 1), sizeof *rcs);
    size_t total = 0;
    for (int i = 0; worlds && rcs && i < n; i++) {
        world_slot_t *w = &s->worlds[i];
        if (w->ckpt.clean)
            continue;
        size_t size = image_size(w);
        worlds[k] = w;
        job->files[k++] = (job_file_t){w->id, 0, total, size};
        total += (size + 7) & ~(size_t)7;
    }
    uint8_t *data = worlds && rcs && total > job->cap ? realloc(job->data, total) : job->data;
    if (!worlds || !rcs || (k && !data)) {
        free(worlds);
        free(rcs);
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for a checkpoint");
    }
    if (total > job->cap)
        job->data = data, job->cap = total;
    build_ctx_t x = {s, job, worlds, rcs};
    rs_pool_run(s->pool, (size_t)k, build_one, &x);
    int kept = 0;
    for (int i = 0; i < k; i++) {
        if (rcs[i] < 0)
            continue; /* logged; left unwritten, as a serial pass leaves it */
        worlds[i]->ckpt.clean = 1;
        worlds[i]->ckpt.mark = job->files[i].mark;
        job->files[kept++] = job->files[i];
    }
    job->nfiles = kept;
    job->used = total;
    free(worlds);
    free(rcs);
    return kept;
}

/* Build the job of a checkpoint (the writer idle): the image of every world changed since its
 * last checkpoint (marked clean now; a failed write marks it again) and the live ids, from
 * the world with id p->resume_id on. With `part` it stops once PART_SECONDS have passed (after
 * one image at least) and leaves p->resume_id at the next world; else it builds them all.
 * 1 when there is something to write, 0 when not, or a negative code. */
static int build_job(rs_server_t *s, int part, rs_status_t *st)
{
    struct rs_persist *p = s->persist;
    job_t *job = &p->job;
    int n = s->nworlds;
    double until = part ? rs_clock() + PART_SECONDS : INFINITY;
    if (rs_pfile_reserve(&job->files, &job->cap_files, n, sizeof *job->files) < 0 ||
        rs_pfile_reserve(&job->live, &job->cap_live, n, sizeof *job->live) < 0)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for a checkpoint");
    if (!job->failed && !(job->failed = malloc((size_t)(s->cfg.max_worlds > 0 ? s->cfg.max_worlds : 1) *
                                               sizeof *job->failed)))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for a checkpoint");
    /* the live ids: unchanged and sorted like the table, unless a world is gone */
    int gone = job->nlive != n;
    for (int i = 0; i < n && !gone; i++)
        gone = job->live[i] != s->worlds[i].id;
    for (int i = 0; i < n; i++)
        job->live[i] = s->worlds[i].id;
    job->nlive = n;
    job->nfiles = 0;
    job->used = 0;
    uint64_t from = p->resume_id;
    p->resume_id = 0;
    if (!part && !from && s->pool) {
        int built = build_all(s, job, st);
        return built < 0 ? built : built > 0 || gone;
    }
    for (int i = 0; i < n; i++) {
        world_slot_t *w = &s->worlds[i];
        if (w->id < from || w->ckpt.clean)
            continue;
        if (job->nfiles > 0 && rs_clock() >= until) {
            p->resume_id = w->id; /* the rest in the next part */
            break;
        }
        size_t len = 0;
        uint64_t mark = 0;
        int rc = build_world_file(s, w, &len, &mark, st);
        if (rc < 0) {
            rs_log(RS_LOG_ERROR, "checkpoint of world %" PRIu64 " failed: %s", w->id, st->message);
            continue;
        }
        w->ckpt.clean = 1; /* changed (its lease at least): written */
        if (job->used + len > job->cap) {
            size_t cap = (job->used + len) * 2;
            uint8_t *grown = realloc(job->data, cap);
            if (!grown) {
                w->ckpt.clean = 0;
                return rs_fail(st, RS_EEXHAUSTED, "out of memory for a checkpoint");
            }
            job->data = grown;
            job->cap = cap;
        }
        memcpy(job->data + job->used, p->buf, len);
        job->files[job->nfiles++] = (job_file_t){w->id, mark, job->used, len};
        job->used += len;
        w->ckpt.mark = mark;
    }
    return job->nfiles > 0 || gone;
}

int rs_server_checkpoint(rs_server_t *s, rs_status_t *st)
{
    struct rs_persist *p = s->persist;
    if (!p)
        return 0;
    if (s->shards) {
        /* a front: each shard checkpoints its worlds (their loops have ended) */
        int rc = 0;
        for (int k = 0; k < p->nshards; k++) {
            rs_status_t kst;
            rs_status_clear(&kst);
            int krc = p->shards[k] ? rs_server_checkpoint(p->shards[k], &kst) : 0;
            if (krc < 0)
                rc = rs_fail(st, krc, "shard %d: %s", k, kst.message);
        }
        return rc;
    }
    rs_status_t wst;
    rs_status_clear(&wst);
    int rc = wait_writer(s, &wst); /* a checkpoint in flight finishes first */
    p->resume_id = 0;
    int todo = build_job(s, 0, st);
    if (todo < 0)
        return todo;
    int jrc = todo ? run_job(p, &p->job, 1, st) : 0;
    for (int i = 0; i < p->job.nfailed; i++) {
        world_slot_t *w = rs_worlds_find(s, p->job.failed[i]);
        if (w)
            w->ckpt.mark = 0, w->ckpt.clean = 0;
    }
    p->job.nfailed = 0;
    if (jrc == 0 && rc < 0)
        rs_fail(st, rc, "%s", wst.message);
    return jrc < 0 ? jrc : rc;
}

int rs_persist_tick(rs_server_t *s)
{
    struct rs_persist *p = s->persist;
    if (!p)
        return -1;
    double now = rs_monotonic();
    if (now < p->next_due && !p->resume_id)
        return (int)fmin(1e6, ceil((p->next_due - now) * 1e3));
    pthread_mutex_lock(&p->lock);
    int busy = p->busy;
    pthread_mutex_unlock(&p->lock);
    if (busy)
        return 1; /* the last part is still being written: try again soon */
    rs_status_t st;
    rs_status_clear(&st);
    wait_writer(s, &st); /* idle: collect its failures (logged by the writer) */
    int todo = build_job(s, 1, &st);
    if (!p->resume_id)
        p->next_due = now + s->cfg.checkpoint_interval; /* the whole pass is built */
    if (todo > 0) {
        pthread_mutex_lock(&p->lock);
        p->busy = 1;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
    }
    return p->resume_id ? 1 : (int)fmin(1e6, ceil(s->cfg.checkpoint_interval * 1e3));
}

void rs_persist_close(rs_server_t *s)
{
    struct rs_persist *p = s->persist;
    if (!p)
        return;
    if (p->writer_started) {
        pthread_mutex_lock(&p->lock);
        p->stop = 1;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->writer, NULL); /* it finishes the job it has */
    }
    /* a shard: its front's list no longer names it (a shard that fails after opening its
     * share is destroyed before its front) */
    if (p->dirp && p->shard < p->dirp->nshards && p->dirp->shards[p->shard] == s)
        p->dirp->shards[p->shard] = NULL;
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->ids_lock);
    free(p->found);
    free(p->shards);
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    free(p->buf);
    free(p->job.files);
    free(p->job.data);
    free(p->job.live);
    free(p->job.failed);
    free(p);
    s->persist = NULL;
}
