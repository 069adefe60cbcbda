/* Declared tasks by owner: the core's registry holds RS_TASK_DOC_MAX_REGISTERED tasks for the
 * whole process and keeps them for its life; here each task a client declared is counted
 * against its quota key and, once unused long enough, taken out of the registry and freed
 * after a grace period (rs_task_names hands out names that live "until the thread's next
 * call", and a CreateWorld may have looked the task up just before: neither outlasts it). */
#include "declared.h"
#include "rs_log.h"
#include "rs_task.h"
#include "rs_task_doc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GRACE_SECONDS 60.0 /* from leaving the registry to being freed */

typedef struct decl {
    const rs_task_t *task;
    char owner[sizeof(((rs_caller_t *)0)->key)]; /* "" for none: never expires */
    int worlds;         /* worlds of it, in every shard */
    double last_used;   /* rs_monotonic(): declared, or a world of it added or removed */
    rs_task_t *retired; /* out of the registry (ours to free), or NULL */
    double retired_at;
} decl_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static decl_t *decls;
static int ndecls, capdecls;

static decl_t *find_locked(const rs_task_t *t)
{
    for (int i = 0; i < ndecls; i++)
        if (decls[i].task == t && !decls[i].retired)
            return &decls[i];
    return NULL;
}

static int owned_locked(const char *key)
{
    int n = 0;
    for (int i = 0; i < ndecls; i++)
        n += !decls[i].retired && strcmp(decls[i].owner, key) == 0;
    return n;
}

int rs_declared_owned(const char *key)
{
    pthread_mutex_lock(&lock);
    int n = owned_locked(key);
    pthread_mutex_unlock(&lock);
    return n;
}

/* Register the task document `doc` (rs_task_doc_register); *name the registered task's name.
 * `want`, when not empty, must be that name. */
static int register_task(const char *doc, const char *want, const char **name, rs_status_t *st)
{
    const rs_task_t *t;
    int rc = rs_task_doc_register(doc, strlen(doc), &t, st);
    if (rc < 0)
        return rc;
    if (want && want[0] && strcmp(want, t->name) != 0)
        return rs_fail(st, RS_EINVAL, "CreateWorld.task '%s' differs from the task document's "
                       "name '%s'; leave task empty or name the document's task", want, t->name);
    *name = t->name;
    return 0;
}

/* The most declared tasks a key may hold. */
static int quota_of(const rs_server_t *s)
{
    int share = (int)(s->cfg.max_worlds_share * RS_TASK_DOC_MAX_REGISTERED);
    int q = s->cfg.max_tasks_per_client;
    return share > 0 && share < q ? share : q;
}

int rs_declared_register(rs_server_t *s, const char *doc, const char *want, const char **name,
                         rs_status_t *st)
{
    const char *key = s->caller ? s->caller->key : "";
    int quota = key[0] ? quota_of(s) : 0;
    /* the quota before the registry: a key at its quota leaves the registry's slots alone */
    pthread_mutex_lock(&lock);
    int have = key[0] ? owned_locked(key) : 0;
    pthread_mutex_unlock(&lock);
    rs_task_t *parsed = rs_task_doc_parse(doc, strlen(doc), st);
    if (!parsed)
        return st->code;
    int rc = 0;
    if (want && want[0] && strcmp(want, parsed->name) != 0) {
        rc = rs_fail(st, RS_EINVAL, "CreateWorld.task '%s' differs from the task document's "
                     "name '%s'; leave task empty or name the document's task", want,
                     parsed->name);
    } else if (quota > 0 && have >= quota) {
        /* at its quota: only a document registered already goes through */
        const rs_task_t *known = rs_task_doc_find(parsed->name);
        if (!known || !rs_task_doc_source(known) ||
            strcmp(rs_task_doc_source(known), rs_task_doc_source(parsed)) != 0)
            rc = rs_fail(st, RS_EEXHAUSTED,
                         "this client already declared %d tasks, its quota (the least of "
                         "--max-tasks-per-client %d and --max-worlds-share %g of the server's "
                         "%d); they expire once no world of theirs has run for --world-ttl and "
                         "the client holds no world",
                         have, s->cfg.max_tasks_per_client, s->cfg.max_worlds_share,
                         RS_TASK_DOC_MAX_REGISTERED);
    }
    rs_task_doc_destroy(&parsed);
    if (rc < 0)
        return rc;
    if ((rc = register_task(doc, NULL, name, st)) < 0)
        return rc;
    const rs_task_t *t = rs_task_doc_find(*name);
    pthread_mutex_lock(&lock);
    decl_t *d = t ? find_locked(t) : NULL;
    if (d) {
        d->last_used = rs_monotonic(); /* declared again: in use */
    } else if (t) {
        int cap = ndecls < capdecls ? capdecls : capdecls ? 2 * capdecls : 16;
        decl_t *grown = cap == capdecls ? decls : realloc(decls, (size_t)cap * sizeof *decls);
        if (grown) {
            decls = grown;
            capdecls = cap;
            decls[ndecls] = (decl_t){.task = t, .last_used = rs_monotonic()};
            snprintf(decls[ndecls].owner, sizeof decls[ndecls].owner, "%s", key);
            ndecls++;
        }
    }
    /* (no room to record it: registered without an owner, as --task-file's are) */
    pthread_mutex_unlock(&lock);
    return 0;
}

void rs_declared_world(const rs_task_t *t, int delta)
{
    if (!t)
        return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ndecls; i++)
        if (decls[i].task == t) { /* retired ones too: their forks keep them alive */
            decls[i].worlds += delta;
            decls[i].last_used = rs_monotonic();
        }
    pthread_mutex_unlock(&lock);
}

void rs_declared_sweep(rs_server_t *s, int (*holds)(const rs_server_t *s, const char *key))
{
    if (!(s->cfg.world_ttl > 0))
        return;
    double now = rs_monotonic();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ndecls;) {
        decl_t *d = &decls[i];
        if (d->retired) {
            if (d->worlds <= 0 && now - d->retired_at >= GRACE_SECONDS) {
                rs_task_doc_destroy(&d->retired);
                decls[i] = decls[--ndecls];
                continue;
            }
        } else if (d->owner[0] && d->worlds <= 0 && now - d->last_used >= s->cfg.world_ttl &&
                   holds(s, d->owner) == 0) {
            /* its name may be declared anew from now; the task itself is freed later */
            rs_log(RS_LOG_INFO, "task '%s' expired: no world of it and none held by the client "
                   "that declared it for %.0f s (--world-ttl %g)", d->task->name,
                   now - d->last_used, s->cfg.world_ttl);
            d->retired = rs_task_doc_unregister(d->task);
            d->retired_at = now;
            if (!d->retired) { /* not in the registry (cannot be): forget it */
                decls[i] = decls[--ndecls];
                continue;
            }
        }
        i++;
    }
    pthread_mutex_unlock(&lock);
}
