/* The server's public entry points (rs_server.h): one request loop serving the socket itself
 * (loop.c), or, with --shards N, a front (front.c) that runs N such loops behind one port. */
#include "front.h"
#include "loop.h"

#include <string.h>
#include <unistd.h>

int rs_cpus_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
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
    return cfg->shards <= 1 ? rs_loop_new(cfg, NULL, st) : rs_front_new(cfg, st);
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
