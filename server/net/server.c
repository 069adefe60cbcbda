/* The server's public entry points (rs_server.h): one request loop serving the socket itself
 * (loop.c), or, with several shards (one per CPU by default), a front (front.c) that runs N
 * such loops behind one port. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "front.h"
#include "loop.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

int rs_cpus_online(void)
{
    cpu_set_t set; /* the CPUs this process may run on (a container's or taskset's share) */
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void rs_server_config_resolve(rs_server_config_t *cfg)
{
    int cpus = rs_cpus_online();
    if (cfg->shards <= 0) /* auto: a loop per CPU where the front can spread connections */
        cfg->shards = cfg->bind && !strncmp(cfg->bind, "tcp://", 6) ? cpus : 1;
    if (cfg->shards > RS_MAX_SHARDS)
        cfg->shards = RS_MAX_SHARDS;
    if (cfg->threads <= 0) /* auto: every CPU for each shard's batches (see rs_server.h) */
        cfg->threads = cpus;
}

void rs_server_config_defaults(rs_server_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
#define RS_CONFIG_DEFAULT(type, name, dflt) cfg->name = dflt;
    RS_SERVER_CONFIG(RS_CONFIG_DEFAULT)
#undef RS_CONFIG_DEFAULT
}

rs_server_t *rs_server_new(const rs_server_config_t *cfg, rs_status_t *st)
{
    rs_server_config_t resolved = *cfg;
    rs_server_config_resolve(&resolved);
    return resolved.shards <= 1 ? rs_loop_new(&resolved, NULL, st)
                                : rs_front_new(&resolved, st);
}

int rs_server_run(rs_server_t *s, rs_stop_flag_t *stop)
{
    return s->shards ? rs_front_run(s, stop) : rs_loop_run(s, stop);
}

void rs_server_destroy(rs_server_t **ps)
{
    if (*ps && (*ps)->shards)
        rs_front_destroy(ps);
    else
        rs_loop_destroy(ps);
}
