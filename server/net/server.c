/* The server's public entry points (rs_server.h): one request loop serving the socket itself
 * (loop.c), or, with --shards N, a front (front.c) that runs N such loops behind one port. */
#include "front.h"
#include "loop.h"

#include <unistd.h>

void rs_server_config_defaults(rs_server_config_t *cfg)
{
    cfg->bind = "tcp://127.0.0.1:5555";
    cfg->max_worlds = 256;
    cfg->max_message_size = 4u << 20;
    cfg->max_steps_per_request = 1000000;
    cfg->default_preset = "workshop";
    cfg->lease_seconds = 30.0;
    cfg->controller_token = NULL;
    cfg->max_batch = 4096;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = ncpu > 0 ? (int)ncpu : 1;
    cfg->stream_endpoint = "tcp://127.0.0.1:5556";
    cfg->stream_explicit = 0;
    cfg->stream_max_hz = 60.0;
    cfg->history_frames = 3600; /* a minute at the default 60 states per second */
    cfg->history_seconds = 60.0;
    cfg->history_bytes_per_world = (size_t)4 << 20;
    cfg->history_bytes = (size_t)256 << 20;
    cfg->snapshot_key_file = NULL;
    cfg->snapshot_key_set = 0;
    cfg->curve_secret_key = NULL;
    cfg->authorized_keys = NULL;
    cfg->insecure = 0;
    cfg->max_request_seconds = 5.0;
    cfg->slice_seconds = 0.005;
    cfg->spin_seconds = 200e-6;
    cfg->max_worlds_per_client = 64;
    cfg->max_worlds_share = 0.5;
    cfg->max_inflight_per_client = 4;
    cfg->max_tasks_per_client = 8;
    cfg->max_queued_bytes_per_peer = (size_t)64 << 20;
    cfg->world_ttl = 3600.0;
    cfg->state_dir = NULL;
    cfg->checkpoint_interval = 10.0;
    cfg->shards = 1;
    cfg->shard_ports = 0;
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
