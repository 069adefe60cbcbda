/* Declared tasks (RegisterTask, CreateWorld.task_document) by the client that declared them
 * (declared.c): counted per quota key as worlds are, and taken out of the registry once
 * their owner holds no world and none of them has been used for --world-ttl. One record for
 * the process, as the core's registry is (shards share it). */
#ifndef RS_DECLARED_H
#define RS_DECLARED_H

#include "server_internal.h"

/* Register the task document `doc` for the calling client (s->caller's key), as
 * rs_register_task does (`want`: the name it must have, or empty). A document not yet
 * registered counts against the key: past cfg.max_tasks_per_client, or past
 * cfg.max_worlds_share of the process's RS_TASK_DOC_MAX_REGISTERED, RS_EEXHAUSTED. Registering
 * a registered document again is accepted and counts nothing. In-process callers and
 * --task-file have no quota and their tasks never expire. *name: the task's name. */
int rs_declared_register(rs_server_t *s, const char *doc, const char *want, const char **name,
                         rs_status_t *st);

/* A world of task t (NULL, built-in or not client-declared: nothing) was added (delta 1) or
 * removed (-1): while any exists, t does not expire. */
void rs_declared_world(const rs_task_t *t, int delta);

/* The loop's --world-ttl sweep: take out of the registry the declared tasks that no world
 * runs, that nobody declared again or created a world of for cfg.world_ttl, and whose owner
 * holds no world (holds(s, key): the worlds a key holds, rs_worlds_owned); free those taken
 * out a grace period ago (names and pointers handed out before then are no longer in use). */
void rs_declared_sweep(rs_server_t *s, int (*holds)(const rs_server_t *s, const char *key));

/* Declared tasks the quota key holds. */
int rs_declared_owned(const char *key);

#endif
