/* robosim-server: command line, signals, start-up. */
#include "rs_log.h"
#include "rs_server.h"
#include "rs_task_doc.h"

#include "robosim_client.h" /* rsc_load_certificate: the key files robosim-cli keygen writes */

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rs_stop_flag_t stop_requested; /* set from on_signal: a lock-free atomic may be */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag is set from a signal handler");

/* The flags, one line each, in the order --help lists them: an id, the long name, its short
 * letter (0: none), whether it takes an argument, what it does to the configuration `cfg` (or
 * the other settings of main) with its argument `optarg`, and its --help text (a printf format
 * and its arguments, read from the defaults `d`). The enum of option codes, --help, the option
 * table, the short options and the parsing switch are all made from this list; the
 * configuration's fields and defaults are rs_server.h's RS_SERVER_CONFIG. */
#define RS_SERVER_FLAGS(X)                                                                       \
    X(BIND, "bind", 'b', required_argument, cfg.bind = optarg,                                  \
      "  --bind ENDPOINT            ZeroMQ endpoint to serve on (default %s;\n"                  \
      "                             loopback only unless you name another address,\n"           \
      "                             which needs CURVE keys or --insecure)\n",                    \
      d->bind)                                                                                   \
    X(WORLD, "world", 'w', required_argument, cfg.default_preset = optarg,                      \
      "  --world PRESET             world created at start-up as world 1 (default %s;\n"        \
      "                             presets:%s)\n",                                              \
      d->default_preset, preset_list())                                                          \
    X(NO_WORLD, "no-world", 'n', no_argument, cfg.default_preset = NULL,                        \
      "  --no-world                 start with no world\n")                                     \
    X(MAX_WORLDS, "max-worlds", 'W', required_argument,                                         \
      cfg.max_worlds = (int)parse_count("--max-worlds", optarg, 1000000),                        \
      "  --max-worlds N             worlds the server holds at most (default %d)\n",            \
      d->max_worlds)                                                                             \
    X(MAX_MESSAGE_SIZE, "max-message-size", 'M', required_argument,                             \
      cfg.max_message_size = parse_count("--max-message-size", optarg, 1ull << 30),              \
      "  --max-message-size BYTES   largest request served (default %zu); larger ones get\n"    \
      "                             RESOURCE_EXHAUSTED\n",                                       \
      d->max_message_size)                                                                       \
    X(MAX_STEPS, "max-steps-per-request", 'S', required_argument,                               \
      cfg.max_steps_per_request = parse_count("--max-steps-per-request", optarg, 1ull << 40),   \
      "  --max-steps-per-request N  control steps one Step may ask for (default %llu)\n",       \
      (unsigned long long)d->max_steps_per_request)                                              \
    X(MAX_BATCH, "max-batch", 'B', required_argument,                                           \
      cfg.max_batch = (int)parse_count("--max-batch", optarg, 1000000),                          \
      "  --max-batch N              items one StepBatch may hold (default %d)\n", d->max_batch) \
    X(THREADS, "threads", 'j', required_argument,                                               \
      cfg.threads = parse_auto_count("--threads", optarg, 256),                                  \
      "  --threads N|auto           worker threads stepping a StepBatch's worlds in\n"          \
      "                             parallel (the shards share N - 1 helpers; default\n"         \
      "                             auto: the CPUs this process may use, %d here)\n",             \
      rs_cpus_online())                                                                          \
    X(SHARDS, "shards", 0, required_argument,                                                   \
      cfg.shards = parse_auto_count("--shards", optarg, RS_MAX_SHARDS),                          \
      "  --shards N|auto            N request loops, each on its thread with its own\n"         \
      "                             listening socket on the --bind port (tcp:// only)\n"         \
      "                             and its own worlds (default auto: one per CPU\n"             \
      "                             with a tcp:// --bind, else 1; --shards 1: one loop)\n")      \
    X(SHARD_PORTS, "shard-ports", 0, required_argument,                                         \
      cfg.shard_ports = parse_shard_ports(optarg),                                               \
      "  --shard-ports auto|off|BASE with --shards: each shard also listens on its own\n"       \
      "                             port (auto: free ones; BASE: BASE, BASE+1, ...),\n"          \
      "                             listed in Hello.shard_ports, so a client sends a\n"          \
      "                             world's requests straight to its shard (default\n"           \
      "                             auto; publish them too when mapping ports)\n")               \
    X(STREAM, "stream", 'P', required_argument,                                                 \
      (cfg.stream_endpoint = optarg, cfg.stream_explicit = 1),                                   \
      "  --stream ENDPOINT          observer stream: a PUB socket on which every world\n"       \
      "                             publishes its state after each step, reset and\n"            \
      "                             set_state, topic \"world/<id>/\" then a StreamFrame\n"       \
      "                             (default %s; a port of * picks a free one;\n"                \
      "                             Hello.stream_endpoint says where it is)\n",                  \
      d->stream_endpoint)                                                                        \
    X(NO_STREAM, "no-stream", 'N', no_argument, cfg.stream_endpoint = NULL,                     \
      "  --no-stream                no observer stream\n")                                      \
    X(STREAM_MAX_HZ, "stream-max-hz", 'H', required_argument,                                   \
      cfg.stream_max_hz = parse_positive("--stream-max-hz", optarg, 1e6, "states per second"),  \
      "  --stream-max-hz HZ         states a world publishes per second at most (default\n"     \
      "                             %g; a world's stream_max_hz parameter may lower it,\n"       \
      "                             never raise it); the latest state is published when\n"       \
      "                             the limit allows\n",                                         \
      d->stream_max_hz)                                                                          \
    X(HISTORY_FRAMES, "history-frames", 0, required_argument,                                   \
      cfg.history_frames = strcmp(optarg, "0") == 0                                              \
                               ? 0                                                               \
                               : (int)parse_count("--history-frames", optarg, 10000000),         \
      "  --history-frames N         frames of stream history each world keeps for late\n"       \
      "                             watchers (GetHistory, robosim view/record; default\n"        \
      "                             %d; 0: none)\n",                                             \
      d->history_frames)                                                                         \
    X(HISTORY_SECONDS, "history-seconds", 0, required_argument,                                 \
      cfg.history_seconds = strcmp(optarg, "0") == 0                                             \
                                ? 0.0                                                            \
                                : parse_positive("--history-seconds", optarg, 1e9, "seconds"),  \
      "  --history-seconds S        ... dropping frames older than S s (default %g; 0:\n"       \
      "                             kept until newer ones push them out)\n",                     \
      d->history_seconds)                                                                        \
    X(HISTORY_BYTES_PER_WORLD, "history-bytes-per-world", 0, required_argument,                 \
      cfg.history_bytes_per_world = parse_bytes("--history-bytes-per-world", optarg, 4096),      \
      "  --history-bytes-per-world BYTES  ... and the oldest past BYTES of one world's\n"       \
      "                             history (default %zuM; suffix K, M or G: KiB, MiB,\n"        \
      "                             GiB). A frame holds a whole state with the events of\n"      \
      "                             its step: 0.1 to 40 kB\n",                                   \
      d->history_bytes_per_world >> 20)                                                          \
    X(HISTORY_BYTES, "history-bytes", 0, required_argument,                                     \
      cfg.history_bytes = parse_bytes("--history-bytes", optarg, 4096),                          \
      "  --history-bytes BYTES      all worlds' history together at most (default %zuM);\n"     \
      "                             past it the largest history drops its oldest frames\n",      \
      d->history_bytes >> 20)                                                                    \
    X(LEASE, "lease", 'L', required_argument,                                                   \
      cfg.lease_seconds = parse_positive("--lease", optarg, 1e9, "seconds"),                     \
      "  --lease SECONDS            a world's controller lease (default %g): every accepted\n"  \
      "                             change renews it; once it lapses another client may\n"       \
      "                             Claim the world and the old token stops working\n",          \
      d->lease_seconds)                                                                          \
    X(CONTROLLER_TOKEN, "controller-token", 'T', required_argument,                             \
      cfg.controller_token = parse_token("--controller-token", optarg),                          \
      "  --controller-token TOKEN   world 1's controller token (32 hex digits, e.g. from\n"     \
      "                             'openssl rand -hex 16'); its lease runs from start-up.\n"    \
      "                             Without it world 1 gets a random token, printed in the\n"    \
      "                             log, and is claimable at once (robosim-cli claim)\n")        \
    X(SNAPSHOT_KEY_FILE, "snapshot-key-file", 'K', required_argument,                           \
      cfg.snapshot_key_file = optarg,                                                            \
      "  --snapshot-key-file FILE   the key snapshots are authenticated with (HMAC-SHA512-\n"   \
      "                             256): 32 random bytes or 64 hex digits, mode 600\n"          \
      "                             (head -c 32 /dev/urandom > FILE; chmod 600 FILE).\n"         \
      "                             Servers given the same file restore each other's\n"          \
      "                             snapshots; without it the key is random per process\n"       \
      "                             and a snapshot restores only on the server that made it\n")  \
    X(CURVE_SECRET_FILE, "curve-secret-file", 'C', required_argument,                           \
      curve_secret_file = optarg,                                                                \
      "  --curve-secret-file FILE   run CurveZMQ on both sockets with the server's key\n"       \
      "                             pair from FILE (PREFIX.key_secret from 'robosim-cli\n"       \
      "                             keygen --out PREFIX'; give clients PREFIX.key or the\n"      \
      "                             public key the log prints). Needs --authorized-keys\n")      \
    X(AUTHORIZED_KEYS, "authorized-keys", 'A', required_argument, cfg.authorized_keys = optarg, \
      "  --authorized-keys FILE     the clients admitted with CURVE, one per line: its\n"       \
      "                             public key (40 Z85 characters, the public-key of its\n"      \
      "                             .key file) and its role, 'controller' (may create,\n"        \
      "                             fork, claim and change worlds) or 'observer' (may\n"         \
      "                             read and watch only); a comment starts with '#' at\n"        \
      "                             the start of a line or after the role. Any other\n"          \
      "                             key, and any plaintext client, gets no answer\n")            \
    X(INSECURE, "insecure", 'I', no_argument, cfg.insecure = 1,                                 \
      "  --insecure                 allow --bind or --stream on a non-loopback address\n"       \
      "                             without CURVE (refused otherwise: anyone on the\n"           \
      "                             network could read and forge requests and tokens)\n")        \
    X(EXIT_WITH_STDIN, "exit-with-stdin", 'E', no_argument, exit_with_stdin = 1,                \
      "  --exit-with-stdin          stop when stdin reaches end of file: a parent that\n"       \
      "                             passes a pipe takes the server down when it dies\n")         \
    X(MAX_REQUEST_SECONDS, "max-request-seconds", 'R', required_argument,                       \
      cfg.max_request_seconds = parse_positive("--max-request-seconds", optarg, 1e9, "seconds"), \
      "  --max-request-seconds S    compute budget of one request (default %g): a Step\n"       \
      "                             still running past it stops at a control-step\n"             \
      "                             boundary and gets DEADLINE_EXCEEDED saying how far it\n"     \
      "                             got; the world can be stepped on. Long Steps and\n"          \
      "                             StepBatches run in slices of %g ms, other clients\n"         \
      "                             served in between\n",                                        \
      d->max_request_seconds, d->slice_seconds * 1e3)                                            \
    X(SPIN_US, "spin-us", 0, required_argument,                                                 \
      cfg.spin_seconds = strcmp(optarg, "0") == 0                                                \
                             ? 0.0                                                               \
                             : 1e-6 * (double)parse_count("--spin-us", optarg, 100000),          \
      "  --spin-us N                after a reply, a request loop polls its socket for\n"       \
      "                             the next request up to N us before it sleeps, while\n"       \
      "                             its requests lately came back that soon and the\n"           \
      "                             machine has a core to spare (a client stepping in a\n"       \
      "                             tight loop: no wake-up in its round trip); cores\n"          \
      "                             counted within the affinity mask and the cgroup's\n"         \
      "                             CPU quota; default %g, 0: never (the poll costs\n"           \
      "                             CPU: give it back where latency matters less)\n",            \
      d->spin_seconds * 1e6)                                                                     \
    X(WORLDS_PER_CLIENT, "max-worlds-per-client", 0, required_argument,                         \
      cfg.max_worlds_per_client =                                                                \
          strcmp(optarg, "0") == 0                                                               \
              ? 0                                                                                \
              : (int)parse_count("--max-worlds-per-client", optarg, 1000000),                    \
      "  --max-worlds-per-client N  worlds one client may hold (default %d): those it\n"        \
      "                             created, forked or claimed; a client is its CURVE\n"         \
      "                             key, else its address (every loopback client is one\n"       \
      "                             client; an IPv6 client is its /64). 0: no per-client\n"      \
      "                             limit (a server for one client, sized by --max-worlds)\n",   \
      d->max_worlds_per_client)                                                                  \
    X(WORLDS_SHARE, "max-worlds-share", 0, required_argument,                                   \
      cfg.max_worlds_share = parse_positive("--max-worlds-share", optarg, 1.0,                   \
                                            "the server's worlds (a fraction)"),                 \
      "  --max-worlds-share F       one client holds at most this share of --max-worlds\n"      \
      "                             (default %g; 1: the whole server), whatever\n"               \
      "                             --max-worlds-per-client says\n",                             \
      d->max_worlds_share)                                                                       \
    X(TASKS_PER_CLIENT, "max-tasks-per-client", 0, required_argument,                           \
      cfg.max_tasks_per_client =                                                                 \
          (int)parse_count("--max-tasks-per-client", optarg, RS_TASK_DOC_MAX_REGISTERED),        \
      "  --max-tasks-per-client N   task documents one client may declare (RegisterTask,\n"     \
      "                             CreateWorld.task_document) and hold (default %d), at\n"      \
      "                             most --max-worlds-share of the %d the server holds;\n"       \
      "                             with --world-ttl, a client's task no world has run\n"        \
      "                             for that long, while the client holds no world, is\n"        \
      "                             dropped (its name free again); --task-file's stay\n",        \
      d->max_tasks_per_client, RS_TASK_DOC_MAX_REGISTERED)                                       \
    X(INFLIGHT_PER_CLIENT, "max-inflight-per-client", 0, required_argument,                     \
      cfg.max_inflight_per_client =                                                              \
          (int)parse_count("--max-inflight-per-client", optarg, 1000000),                        \
      "  --max-inflight-per-client N  requests of one client held unanswered at a time,\n"      \
      "                             parked or waiting behind a long Step (default %d)\n",        \
      d->max_inflight_per_client)                                                                \
    X(QUEUED_PER_PEER, "max-queued-bytes-per-peer", 0, required_argument,                       \
      cfg.max_queued_bytes_per_peer = parse_bytes("--max-queued-bytes-per-peer", optarg, 65536), \
      "  --max-queued-bytes-per-peer BYTES  replies a connection has not read yet that\n"       \
      "                             the server holds for it (default %zuM; suffix K, M\n"        \
      "                             or G): while they are past BYTES, each request of\n"         \
      "                             that connection is refused unrun with a short\n"             \
      "                             RESOURCE_EXHAUSTED (with --shards, one already\n"            \
      "                             passed to another shard runs, and its reply is\n"            \
      "                             replaced by that error); counted in the stop's log\n"        \
      "                             line. One reply may take it past BYTES, so a\n"              \
      "                             connection holds at most BYTES plus its largest reply\n",    \
      d->max_queued_bytes_per_peer >> 20)                                                        \
    X(WORLD_TTL, "world-ttl", 0, required_argument,                                             \
      cfg.world_ttl = strcmp(optarg, "0") == 0                                                   \
                          ? 0.0                                                                  \
                          : parse_positive("--world-ttl", optarg, 1e9, "seconds"),               \
      "  --world-ttl SECONDS        destroy a world whose controller sent it no request\n"      \
      "                             for this long, e.g. a killed client's (default %g; 0:\n"     \
      "                             never); the start-up world is kept until claimed\n",         \
      d->world_ttl)                                                                              \
    X(TASK_FILE, "task-file", 0, required_argument, register_task_file(optarg),                 \
      "  --task-file FILE           register the task document in FILE (JSON, as\n"             \
      "                             RegisterTask takes it) before serving; repeatable.\n"        \
      "                             Worlds of it kept in --state-dir need it at restart\n")      \
    X(STATE_DIR, "state-dir", 'D', required_argument, cfg.state_dir = optarg,                   \
      "  --state-dir DIR            keep every world in DIR (created 0700): its snapshot,\n"    \
      "                             controller token and lease are checkpointed every\n"         \
      "                             --checkpoint-interval and when the server stops\n"           \
      "                             (SIGINT, SIGTERM), and restored with the same ids and\n"     \
      "                             tokens at the next start; world ids are never reused.\n"     \
      "                             A state dir that held worlds replaces --world;\n"            \
      "                             with --shards its worlds are spread over the shards\n"       \
      "                             (any --shards may reopen it)\n")                             \
    X(CHECKPOINT_INTERVAL, "checkpoint-interval", 0, required_argument,                         \
      cfg.checkpoint_interval =                                                                  \
          parse_positive("--checkpoint-interval", optarg, 1e6, "seconds"),                       \
      "  --checkpoint-interval SECONDS  seconds between checkpoints (default %g); only\n"       \
      "                             worlds changed since their last one are written\n",          \
      d->checkpoint_interval)                                                                    \
    X(LOG_LEVEL, "log-level", 'l', required_argument, level = parse_level(optarg),              \
      "  --log-level LEVEL          error, warn, info or debug (default info); logs go to\n"    \
      "                             stderr\n")                                                   \
    X(VERSION, "version", 'v', no_argument, return print_version(),                             \
      "  --version                  print the version and exit\n")                              \
    X(HELP, "help", 'h', no_argument, return (usage(stdout, &cfg), 0),                          \
      "  --help                     print this help and exit\n")

/* Each flag's code for getopt_long: its short letter, or an OPT_ code past every letter. */
enum {
    OPT_FIRST = 1000,
#define X(ID, name, letter, arg, action, ...) OPT_##ID,
    RS_SERVER_FLAGS(X)
#undef X
};
#define FLAG_CODE(ID, letter) ((letter) ? (letter) : OPT_##ID)

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_requested, 1);
}

/* " preset1 preset2 ...": the presets --world takes, for --help. */
static const char *preset_list(void)
{
    static char list[1024];
    size_t n = 0;
    list[0] = '\0';
    for (const char *const *p = rs_preset_names(); *p && n < sizeof list; p++)
        n += (size_t)snprintf(list + n, sizeof list - n, " %s", *p);
    return list;
}

static void usage(FILE *f, const rs_server_config_t *d)
{
    fprintf(f, "usage: robosim-server [options]\n"
               "\n"
               "Serves robosim worlds over ZeroMQ (ROUTER socket, protocol robosim.v1).\n"
               "\n"
               "options:\n");
#define X(ID, name, letter, arg, action, ...) fprintf(f, __VA_ARGS__);
    RS_SERVER_FLAGS(X)
#undef X
    fprintf(f,
            "\n"
            "Roles: CreateWorld, ForkWorld and Claim reply with a controller token; requests\n"
            "that change a world (step, reset, set_force, set_params, set_schedule, set_target,\n"
            "set_state, destroy_world) must carry it in Request.token, others get\n"
            "PERMISSION_DENIED; each StepBatch item carries its world's token. Reading\n"
            "(get_spec, get_state, list_worlds), forking and watching need no token.\n"
            "With CURVE, only admitted keys get in, and 'observer' keys are refused\n"
            "(PERMISSION_DENIED) every create, fork, claim and change whatever token they show.\n"
            "\n"
            "SIGINT or SIGTERM stop the server within a second, whatever runs: every world\n"
            "at a control-step boundary, requests in flight answered UNAVAILABLE.\n");
}

/* --exit-with-stdin: read stdin until EOF (the process holding its write end died, however it
 * died, or closed it), then stop as SIGTERM does. A pipe rather than PR_SET_PDEATHSIG, which
 * fires when the parent *thread* exits. */
static void *watch_stdin(void *arg)
{
    (void)arg;
    char buf[256];
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) != 0)
        if (n < 0 && errno != EINTR)
            break;
    rs_log(RS_LOG_INFO, "stdin closed: stopping (--exit-with-stdin)");
    kill(getpid(), SIGTERM);
    return NULL;
}

/* A positive number of `unit` (at most `max`), or exit with a message. */
static double parse_positive(const char *flag, const char *arg, double max, const char *unit)
{
    char *end;
    double v = strtod(arg, &end);
    if (!*arg || *end || !(v > 0) || v > max) {
        fprintf(stderr, "robosim-server: %s wants a number of %s above 0 and at most %g, got '%s'\n",
                flag, unit, max, arg);
        exit(2);
    }
    return v;
}

/* A byte count of at least `min`: digits, optionally K, M or G (KiB, MiB, GiB); or exit with a
 * message. */
static size_t parse_bytes(const char *flag, const char *arg, unsigned long long min)
{
    char *end;
    unsigned long long v = strtoull(arg, &end, 10), unit = 1, max = 1ull << 40;
    if (*end == 'K' || *end == 'k')
        unit = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        unit = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        unit = 1ull << 30, end++;
    if (!*arg || *end || arg[0] == '-' || end == arg || v > max / unit || v * unit < min) {
        fprintf(stderr, "robosim-server: %s wants bytes from %llu to %llu (suffix K, M or G for "
                        "KiB, MiB, GiB), got '%s'\n",
                flag, min, max, arg);
        exit(2);
    }
    return (size_t)(v * unit);
}

/* Register the task document in `path` (--task-file); exits with status 2 on an error. */
static void register_task_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)n + 1)) && fread(text, 1, (size_t)n, f) == (size_t)n) {
        rs_status_t st;
        const rs_task_t *t;
        if (rs_task_doc_register(text, (size_t)n, &t, &st) < 0) {
            fprintf(stderr, "robosim-server: --task-file %s: %s\n", path, st.message);
            exit(2);
        }
        rs_log(RS_LOG_INFO, "task '%s' registered from %s", t->name, path);
    } else {
        fprintf(stderr, "robosim-server: --task-file %s: %s\n", path,
                f ? "cannot read it" : strerror(errno));
        exit(2);
    }
    free(text);
    fclose(f);
}

/* A controller token as the server makes them: 32 hex digits. */
static const char *parse_token(const char *flag, const char *arg)
{
    size_t n = strlen(arg);
    int ok = n == 32;
    for (size_t i = 0; ok && i < n; i++)
        ok = (arg[i] >= '0' && arg[i] <= '9') || (arg[i] >= 'a' && arg[i] <= 'f');
    if (!ok) {
        fprintf(stderr, "robosim-server: %s wants 32 lowercase hex digits (e.g. from 'openssl "
                        "rand -hex 16'), got %zu characters\n",
                flag, n);
        exit(2);
    }
    return arg;
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

/* A count or "auto" (0: rs_server_config_resolve decides); or exit with a message. */
static int parse_auto_count(const char *flag, const char *arg, unsigned long long max)
{
    return !strcmp(arg, "auto") ? 0 : (int)parse_count(flag, arg, max);
}

/* --shard-ports: auto (0), off (-1) or a base port; or exit with a message. */
static int parse_shard_ports(const char *arg)
{
    if (!strcmp(arg, "auto"))
        return 0;
    if (!strcmp(arg, "off"))
        return -1;
    if (strspn(arg, "0123456789") != strlen(arg) || atoi(arg) < 1 || atoi(arg) > 65535) {
        fprintf(stderr, "robosim-server: --shard-ports wants auto, off or a port from 1 "
                        "to 65535 (shard k listens on it plus k), got '%s'\n", arg);
        exit(2);
    }
    return atoi(arg);
}

/* --log-level: the level, or exit with a message. */
static enum rs_log_level parse_level(const char *arg)
{
    enum rs_log_level level;
    if (rs_log_parse_level(arg, &level) < 0) {
        fprintf(stderr, "robosim-server: --log-level wants error, warn, info or debug, got '%s'\n",
                arg);
        exit(2);
    }
    return level;
}

static int print_version(void)
{
    printf("robosim-server %s (protocol %d.%d)\n", RS_VERSION, RS_PROTOCOL_MAJOR,
           RS_PROTOCOL_MINOR);
    return 0;
}

int main(int argc, char **argv)
{
    rs_server_config_t cfg;
    rs_server_config_defaults(&cfg);
    enum rs_log_level level = RS_LOG_INFO;
    const char *curve_secret_file = NULL;
    char curve_public[RSC_KEY_LEN + 1], curve_secret[RSC_KEY_LEN + 1] = "";
    int exit_with_stdin = 0;
    static const struct option opts[] = {
#define X(ID, name, letter, arg, action, ...) {name, arg, 0, FLAG_CODE(ID, letter)},
        RS_SERVER_FLAGS(X)
#undef X
        {0, 0, 0, 0},
    };
    char shorts[2 * sizeof opts / sizeof opts[0] + 1], *sp = shorts;
#define X(ID, name, letter, arg, action, ...)                                                   \
    if (letter) {                                                                                \
        *sp++ = (char)(letter);                                                                  \
        if ((arg) == required_argument)                                                          \
            *sp++ = ':';                                                                         \
    }
    RS_SERVER_FLAGS(X)
#undef X
    *sp = '\0';
    int c;
    while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        switch (c) {
#define X(ID, name, letter, arg, action, ...)                                                   \
    case FLAG_CODE(ID, letter): action; break;
            RS_SERVER_FLAGS(X)
#undef X
        default: usage(stderr, &cfg); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "robosim-server: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    rs_log_set_level(level);
    if (curve_secret_file) {
        rsc_error_t err;
        if (rsc_load_certificate(curve_secret_file, curve_public, curve_secret, &err) != 0) {
            fprintf(stderr, "robosim-server: --curve-secret-file: %s\n", err.message);
            return 2;
        }
        /* refused as an open --snapshot-key-file is: whoever reads it can pose as this server */
        struct stat sb = {0};
        if (stat(curve_secret_file, &sb) != 0 || (sb.st_mode & 077)) {
            memset(curve_secret, 0, sizeof curve_secret);
            fprintf(stderr, "robosim-server: --curve-secret-file %s holds the server's secret key "
                            "but other users may read it (mode %03o): whoever reads it can pose "
                            "as this server; chmod 600 it\n",
                    curve_secret_file, (unsigned)(sb.st_mode & 0777));
            return 2;
        }
        cfg.curve_secret_key = curve_secret;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the poll returns EINTR and the loop stops */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_t stdin_watcher;
    if (exit_with_stdin) {
        if (pthread_create(&stdin_watcher, NULL, watch_stdin, NULL) != 0) {
            rs_log(RS_LOG_ERROR, "cannot start: no thread to watch stdin (--exit-with-stdin)");
            return 1;
        }
        pthread_detach(stdin_watcher);
    }

    rs_status_t st;
    rs_status_clear(&st);
    rs_server_t *s = rs_server_new(&cfg, &st);
    memset(curve_secret, 0, sizeof curve_secret); /* the server keeps its own copy */
    if (!s) {
        rs_log(RS_LOG_ERROR, "cannot start: %s", st.message);
        return 1;
    }
    int rc = rs_server_run(s, &stop_requested);
    if (rs_server_checkpoint(s, &st) < 0) { /* the last one: nothing lost on a clean stop */
        rs_log(RS_LOG_ERROR, "final checkpoint incomplete: %s", st.message);
        rc = -1;
    }
    rs_server_destroy(&s);
    rs_log(RS_LOG_INFO, "stopped");
    return rc < 0 ? 1 : 0;
}
