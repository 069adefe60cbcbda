/* robosim-server: command line, signals, start-up. */
#include "rs_log.h"
#include "rs_server.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f, const rs_server_config_t *d)
{
    fprintf(f,
            "usage: robosim-server [options]\n"
            "\n"
            "Serves robosim worlds over ZeroMQ (ROUTER socket, protocol robosim.v1).\n"
            "\n"
            "options:\n"
            "  --bind ENDPOINT            ZeroMQ endpoint to serve on (default %s;\n"
            "                             loopback only unless you name another address)\n"
            "  --world PRESET             world created at start-up as world 1 (default %s;\n"
            "                             presets:",
            d->bind, d->default_preset);
    for (const char *const *p = rs_preset_names(); *p; p++)
        fprintf(f, " %s", *p);
    fprintf(f,
            ")\n"
            "  --no-world                 start with no world\n"
            "  --max-worlds N             worlds the server holds at most (default %d)\n"
            "  --max-message-size BYTES   largest request served (default %zu); larger ones get\n"
            "                             RESOURCE_EXHAUSTED\n"
            "  --max-steps-per-request N  control steps one Step may ask for (default %llu)\n"
            "  --log-level LEVEL          error, warn, info or debug (default info); logs go to\n"
            "                             stderr\n"
            "  --version                  print the version and exit\n"
            "  --help                     print this help and exit\n"
            "\n"
            "SIGINT or SIGTERM stop the server cleanly.\n",
            d->max_worlds, d->max_message_size, (unsigned long long)d->max_steps_per_request);
}

/* A positive integer flag value, or exit with a message. */
static unsigned long long parse_count(const char *flag, const char *arg, unsigned long long max)
{
    char *end;
    unsigned long long v = strtoull(arg, &end, 10);
    if (!*arg || *end || v == 0 || v > max || arg[0] == '-') {
        fprintf(stderr, "robosim-server: %s wants a whole number from 1 to %llu, got '%s'\n", flag,
                max, arg);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    rs_server_config_t cfg;
    rs_server_config_defaults(&cfg);
    enum rs_log_level level = RS_LOG_INFO;
    static const struct option opts[] = {
        {"bind", required_argument, 0, 'b'},
        {"world", required_argument, 0, 'w'},
        {"no-world", no_argument, 0, 'n'},
        {"max-worlds", required_argument, 0, 'W'},
        {"max-message-size", required_argument, 0, 'M'},
        {"max-steps-per-request", required_argument, 0, 'S'},
        {"log-level", required_argument, 0, 'l'},
        {"version", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "b:w:nW:M:S:l:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'b': cfg.bind = optarg; break;
        case 'w': cfg.default_preset = optarg; break;
        case 'n': cfg.default_preset = NULL; break;
        case 'W': cfg.max_worlds = (int)parse_count("--max-worlds", optarg, 1000000); break;
        case 'M': cfg.max_message_size = parse_count("--max-message-size", optarg, 1ull << 30); break;
        case 'S': cfg.max_steps_per_request = parse_count("--max-steps-per-request", optarg, 1ull << 40); break;
        case 'l':
            if (rs_log_parse_level(optarg, &level) < 0) {
                fprintf(stderr, "robosim-server: --log-level wants error, warn, info or debug, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 'v': printf("robosim-server %s (protocol %d.%d)\n", RS_VERSION, RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR); return 0;
        case 'h': usage(stdout, &cfg); return 0;
        default: usage(stderr, &cfg); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "robosim-server: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    rs_log_set_level(level);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the poll returns EINTR and the loop stops */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rs_status_t st;
    rs_status_clear(&st);
    rs_server_t *s = rs_server_new(&cfg, &st);
    if (!s) {
        rs_log(RS_LOG_ERROR, "cannot start: %s", st.message);
        return 1;
    }
    int rc = rs_server_run(s, &stop_requested);
    rs_server_destroy(&s);
    rs_log(RS_LOG_INFO, "stopped");
    return rc < 0 ? 1 : 0;
}
