/* An in-process server for the tests that call rs_server_handle without sockets. */
#ifndef RS_TEST_INPROC_SERVER_H
#define RS_TEST_INPROC_SERVER_H

#include "rs_server.h"
#include "rs_test.h"

/* cfg at its defaults for an in-process server: no sockets, no default world, one thread. */
static inline void inproc_config(rs_server_config_t *cfg)
{
    rs_server_config_defaults(cfg);
    cfg->bind = NULL;
    cfg->default_preset = NULL;
    cfg->threads = 1;
}

/* A server made from cfg; NULL, a failed check naming the reason, if it cannot be made. */
static inline rs_server_t *inproc_server(const rs_server_config_t *cfg)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_server_t *s = rs_server_new(cfg, &st);
    CHECK(s != NULL, "in-process server: %s", st.message);
    return s;
}

#endif
