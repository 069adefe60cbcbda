/* robosim-cli: a command-line client of the robosim server, in the spirit of redis-cli and
 * grpcurl. Every protocol operation is a subcommand; --json prints the reply generically from
 * the protobuf descriptors (json.c); errors go to stderr with exit status 1 (2 for usage).
 *
 * One table lists the commands (name, handler, whether a world is needed, synopsis). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>
#include <zmq.h>

#include "json.h"
#include "robosim_client.h"

#define DEFAULT_ENDPOINT "tcp://127.0.0.1:5555"
#define DEFAULT_TIMEOUT_MS 5000
#define EXIT_USAGE 2

/* The usage text is three parts: usage_head (options), the command list printed from the
 * commands[] table (usage()), usage_tail (numbers, exit status, examples). */
static const char *usage_head =
    "usage: robosim-cli [--endpoint E] [--timeout MS] [--json] [--world ID] [--token T] COMMAND\n"
    "                   [ARGS]\n"
    "\n"
    "A command-line client of robosim-server: every protocol operation is a command.\n"
    "\n"
    "Options (anywhere on the line, before a lone --):\n"
    "  --endpoint E   server endpoint (default $ROBOSIM_ENDPOINT, else " DEFAULT_ENDPOINT ")\n"
    "  --timeout MS   per-request timeout in milliseconds (default 5000); nothing waits longer\n"
    "  --json         print the reply as JSON (proto field names; enums by name; non-finite\n"
    "                 numbers as the strings \"inf\", \"-inf\", \"nan\")\n"
    "  --world ID     the world a world command acts on (default $ROBOSIM_WORLD, else the only\n"
    "                 world on the server when there is exactly one)\n"
    "  --token T      the world's controller token, needed by commands that change it (default\n"
    "                 $ROBOSIM_TOKEN); create and claim print it\n"
    "  --server-key K the server's CURVE public key, for a server run with --curve-secret-file:\n"
    "                 40 Z85 characters or a file holding it (its .key file); default\n"
    "                 $ROBOSIM_SERVER_KEY\n"
    "  --client-key-file F\n"
    "                 this client's key pair (PREFIX.key_secret from keygen; the server's\n"
    "                 --authorized-keys must list its public key); default\n"
    "                 $ROBOSIM_CLIENT_KEY_FILE\n"
    "  --version      print the version and exit\n"
    "  -h, --help     this text\n";

static const char *usage_tail =
    "Numbers accept inf and nan, so bad input can be sent on purpose.\n"
    "\n"
    "Exit status: 0 ok; 1 the request failed (message on stderr as\n"
    "'robosim-cli: CODE: message', CODE being the server's error code name or TIMEOUT,\n"
    "UNREACHABLE, PROTOCOL, ...); 2 usage error.\n"
    "\n"
    "Examples:\n"
    "  eval \"$(robosim-cli create diff_drive --param robot.obstacles=1.5,0.6,0.2 --export)\"\n"
    "  robosim-cli step --duration 5 --cmd robot=3,3   # world and token from the environment\n"
    "  robosim-cli --json state | jq .entities[0].state\n"
    "  robosim-cli destroy\n"
    "  eval \"$(robosim-cli create --task DiffDriveGoal-v0 --export)\"\n"
    "  robosim-cli step --action 5,5 --parts task   # a task world: its observation and reward\n";

/* ---- the session: options, client, allocations ------------------------------------------- */

typedef struct cli {
    const char *endpoint;
    int timeout_ms;
    int json;
    const char *world_arg; /* --world, or NULL */
    const char *token;     /* --token or $ROBOSIM_TOKEN, or NULL */
    const char *server_key;      /* --server-key or $ROBOSIM_SERVER_KEY, or NULL */
    const char *client_key_file; /* --client-key-file or $ROBOSIM_CLIENT_KEY_FILE, or NULL */
    uint64_t world;
    rsc_client_t *client;
    int argc; /* the command's arguments, after its name */
    char **argv;
} cli_t;

/* everything allocated, freed at exit (keeps LeakSanitizer quiet) */
static void **allocs;
static size_t nallocs, capallocs;
static cli_t *current; /* for the exit path */

static void free_all(void)
{
    for (size_t i = 0; i < nallocs; i++)
        free(allocs[i]);
    free(allocs);
    allocs = NULL;
    nallocs = capallocs = 0;
    if (current)
        rsc_close(&current->client);
}

static void die(int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void die(int status, const char *code, const char *fmt, ...)
{
    fflush(stdout);
    fprintf(stderr, "robosim-cli: %s: ", code);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    free_all();
    exit(status);
}

#define usage_error(...) die(EXIT_USAGE, "USAGE", __VA_ARGS__)

static void *track(void *p)
{
    if (!p)
        die(1, "NO_MEMORY", "out of memory");
    if (nallocs == capallocs) {
        size_t cap = capallocs ? 2 * capallocs : 32;
        void **a = realloc(allocs, cap * sizeof *a);
        if (!a) {
            free(p);
            die(1, "NO_MEMORY", "out of memory");
        }
        allocs = a;
        capallocs = cap;
    }
    allocs[nallocs++] = p;
    return p;
}

static void *xcalloc(size_t n, size_t size)
{
    return track(calloc(n ? n : 1, size));
}

static char *xstrndup(const char *s, size_t n)
{
    return track(strndup(s, n));
}

/* A failed call: print the error and exit 1. */
static void fail(const rsc_error_t *err)
{
    const char *hint = "";
    if (err->code == ROBOSIM__V1__ERROR_CODE__PERMISSION_DENIED)
        hint = current && current->token
                   ? " [robosim-cli sent the token of --token / $ROBOSIM_TOKEN]"
                   : " [give the token with --token T or $ROBOSIM_TOKEN; robosim-cli claim takes "
                     "over a world whose controller's lease has lapsed]";
    die(1, rsc_error_name(err->code), "%s%s", err->message[0] ? err->message : "(no message)",
        hint);
}

/* ---- argument parsing --------------------------------------------------------------------- */

static uint64_t parse_u64(const char *s, const char *what)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        usage_error("%s must be a non-negative integer, got '%s'", what, s ? s : "");
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        usage_error("%s must be a non-negative integer, got '%s'", what, s);
    return v;
}

static uint32_t parse_u32(const char *s, const char *what)
{
    uint64_t v = parse_u64(s, what);
    if (v > UINT32_MAX)
        usage_error("%s must be at most %" PRIu32 ", got '%s'", what, UINT32_MAX, s);
    return (uint32_t)v;
}

static double parse_double(const char *s, const char *what)
{
    char *end;
    if (!s || !*s)
        usage_error("%s: expected a number, got nothing", what);
    double v = strtod(s, &end);
    if (*end)
        usage_error("%s: '%s' is not a number", what, s);
    return v;
}

/* "v1,v2,..." (possibly empty) into a tracked array. */
static double *parse_list(const char *s, size_t *n, const char *what)
{
    *n = 0;
    if (!*s)
        return NULL;
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    double *v = xcalloc(cap, sizeof *v);
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        v[(*n)++] = parse_double(xstrndup(p, len), what);
        if (!comma)
            break;
        p = comma + 1;
    }
    return v;
}

/* "entity.name=v1,v2" / ".name=v" / "name=v" into a parameter (strings tracked). */
static rsc_param_t parse_param(const char *s)
{
    rsc_param_t p = {0};
    const char *eq = strchr(s, '=');
    if (!eq || eq == s)
        usage_error("parameter '%s' should look like entity.name=v1,v2 (or name=v for a world "
                    "parameter)",
                    s);
    const char *dot = memchr(s, '.', (size_t)(eq - s));
    if (dot) {
        p.entity = xstrndup(s, (size_t)(dot - s));
        p.name = xstrndup(dot + 1, (size_t)(eq - dot - 1));
    } else {
        p.entity = "";
        p.name = xstrndup(s, (size_t)(eq - s));
    }
    if (!*p.name)
        usage_error("parameter '%s' has no name before '='", s);
    p.values = parse_list(eq + 1, &p.nvalues, s);
    return p;
}

/* If argv[*i] is option `name` ("--name V" or "--name=V"), return its value and advance *i. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        usage_error("%s needs a value", name);
    return argv[++*i];
}

static int is_option(const char *a)
{
    return a[0] == '-' && a[1] == '-' && a[2] != '\0';
}

static void check_positional(const char *cmd, const char *a)
{
    if (is_option(a))
        usage_error("%s: unknown option '%s'", cmd, a);
}

/* ---- connection and world ------------------------------------------------------------------ */

/* How to connect: the timeout and the CURVE keys of --server-key / --client-key-file. */
static rsc_options_t connect_options(const cli_t *cli)
{
    rsc_options_t o = {.timeout_ms = cli->timeout_ms};
    rsc_error_t err;
    if (rsc_options_set_curve(&o, cli->server_key, cli->client_key_file, &err) != 0)
        usage_error("%s", err.message);
    return o;
}

static rsc_client_t *client(cli_t *cli)
{
    if (!cli->client) {
        rsc_error_t err;
        rsc_options_t o = connect_options(cli);
        cli->client = rsc_connect_with(cli->endpoint, &o, &err);
        memset(&o, 0, sizeof o);
        if (!cli->client)
            fail(&err);
    }
    return cli->client;
}

/* Act on world `id`: the client sends --token / $ROBOSIM_TOKEN with its requests. */
static uint64_t use_world(cli_t *cli, uint64_t id)
{
    if (cli->token && rsc_set_world_token(client(cli), id, cli->token) != 0)
        usage_error("--token '%s' is too long for a controller token", cli->token);
    return id;
}

/* The world a world command acts on: --world, $ROBOSIM_WORLD, or the only one. */
static uint64_t world(cli_t *cli)
{
    const char *w = cli->world_arg ? cli->world_arg : getenv("ROBOSIM_WORLD");
    if (w && *w)
        return use_world(cli, parse_u64(w, "--world"));
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *list = NULL;
    if (rsc_list_worlds(client(cli), &list, &err) != 0)
        fail(&err);
    size_t n = list->n_worlds;
    uint64_t id = n == 1 ? list->worlds[0]->world_id : 0;
    rsc_free(list);
    if (n == 0)
        die(1, "NOT_FOUND", "no world on the server at %s; create one with: robosim-cli create "
                            "diff_drive",
            cli->endpoint);
    if (n > 1)
        usage_error("%zu worlds on the server; pick one with --world ID (see robosim-cli list)", n);
    return use_world(cli, id);
}

/* Print a world's controller token as create and claim do: `mode` 0 the export line on stderr
 * (stdout already has the id), 1 the token on stdout too, 2 the export line on stdout. */
static void print_token(uint64_t id, const char *token, int mode)
{
    if (mode == 1)
        printf("%s\n", token);
    if (mode == 2)
        printf("export ROBOSIM_WORLD=%" PRIu64 " ROBOSIM_TOKEN=%s\n", id, token);
    else
        fprintf(stderr, "# world %" PRIu64 " controller token; to use it from later commands:\n"
                        "export ROBOSIM_WORLD=%" PRIu64 " ROBOSIM_TOKEN=%s\n",
                id, id, token);
}

/* ---- text output ---------------------------------------------------------------------------- */

static void print_json(const void *msg)
{
    if (rsc_json_write(stdout, (const ProtobufCMessage *)msg) != 0)
        die(1, "IO", "cannot write to stdout");
}

static const char *unit_suffix(const char *unit, char *buf, size_t n)
{
    if (!unit || !*unit || strcmp(unit, "1") == 0)
        return "";
    snprintf(buf, n, " %s", unit);
    return buf;
}

/* The name (and unit) of flat value `idx` among variables `vars` (each `size` values wide). */
static void var_label(Robosim__V1__VarSpec **vars, size_t nvars, size_t idx, char *name,
                      size_t n, const char **unit)
{
    *unit = "";
    size_t at = 0;
    for (size_t i = 0; vars && i < nvars; i++) {
        size_t size = vars[i]->size ? vars[i]->size : 1;
        if (idx < at + size) {
            *unit = vars[i]->unit;
            if (size == 1)
                snprintf(name, n, "%s", vars[i]->name);
            else
                snprintf(name, n, "%s[%zu]", vars[i]->name, idx - at);
            return;
        }
        at += size;
    }
    snprintf(name, n, "[%zu]", idx);
}

static void print_values(const char *label, const double *v, size_t n,
                         Robosim__V1__VarSpec **vars, size_t nvars)
{
    printf("  %-9s", label);
    if (n == 0)
        fputs(" -", stdout);
    for (size_t i = 0; i < n; i++) {
        char name[80], ubuf[40];
        const char *unit;
        var_label(vars, nvars, i, name, sizeof name, &unit);
        printf("  %s = %.10g%s", name, v[i], unit_suffix(unit, ubuf, sizeof ubuf));
    }
    putchar('\n');
}

static const Robosim__V1__EntitySpec *entity_spec(const Robosim__V1__Spec *spec,
                                                  const char *name)
{
    for (size_t i = 0; spec && i < spec->n_entities; i++)
        if (strcmp(spec->entities[i]->name, name) == 0)
            return spec->entities[i];
    return NULL;
}

static void print_state(const Robosim__V1__State *s, const Robosim__V1__Spec *spec)
{
    printf("world %" PRIu64 "  t = %.10g s  step %" PRIu64 "  digest ", s->world_id, s->time,
           s->step_count);
    for (size_t i = 0; i < s->digest.len; i++)
        printf("%02x", s->digest.data[i]);
    putchar('\n');
    for (size_t i = 0; i < s->n_entities; i++) {
        const Robosim__V1__EntityState *e = s->entities[i];
        const Robosim__V1__EntitySpec *es = entity_spec(spec, e->name);
        printf("%s (%s)  mode %s\n", e->name, e->kind, e->mode);
        print_values("state", e->state, e->n_state, es ? es->state : NULL,
                     es ? es->n_state : 0);
        print_values("commands", e->commands, e->n_commands, es ? es->actuators : NULL,
                     es ? es->n_actuators : 0);
        print_values("sensors", e->sensors, e->n_sensors, es ? es->sensors : NULL,
                     es ? es->n_sensors : 0);
    }
    printf("events: %zu", s->n_events);
    if (s->events_dropped)
        printf(" (%" PRIu32 " more dropped: the log was full)", s->events_dropped);
    putchar('\n');
    for (size_t i = 0; i < s->n_events; i++) {
        const Robosim__V1__Event *ev = s->events[i];
        printf("  t = %.17g s  %s %s  value %.10g\n", ev->time, ev->entity, ev->kind, ev->value);
    }
    if (s->task) {
        const Robosim__V1__TaskStep *t = s->task;
        printf("task: reward %.10g%s%s\n  observation", t->reward,
               t->terminated ? "  terminated" : "", t->truncated ? "  truncated" : "");
        for (size_t i = 0; i < t->n_observation; i++)
            printf(" %.10g", t->observation[i]);
        putchar('\n');
        for (size_t i = 0; i < t->n_info_keys && i < t->n_info_values; i++)
            printf("  %s = %.10g\n", t->info_keys[i], t->info_values[i]);
    }
    if (s->stats)
        printf("integrator: %" PRIu64 " internal steps, %" PRIu64 " rhs evals, %" PRIu64
               " root evals, %" PRIu64 " events in all\n",
               s->stats->internal_steps, s->stats->rhs_evals, s->stats->root_evals,
               s->stats->events);
}

/* Print a State reply (text needs the spec for the variable names). */
/* A Step's Jacobian as rows: d x(after) / d (x(before), u, params). */
static void print_jacobian(const Robosim__V1__Jacobian *j)
{
    if (!j->differentiable) {
        printf("jacobian: not differentiable: %s\n", j->not_differentiable);
        return;
    }
    size_t n = j->n, m = j->m, q = j->n_params;
    printf("jacobian (d x_after / d [x_before (%zu) | commands (%zu)", n, m);
    for (size_t k = 0; k < q; k++)
        printf(" | %s", j->params[k]);
    printf("]):\n");
    for (size_t i = 0; i < n; i++) {
        printf(" ");
        for (size_t k = 0; k < n; k++)
            printf(" %12.6g", j->state[i * n + k]);
        printf("  |");
        for (size_t k = 0; k < m; k++)
            printf(" %12.6g", j->commands[i * m + k]);
        printf("  |");
        for (size_t k = 0; k < q; k++)
            printf(" %12.6g", j->param_columns[i * q + k]);
        putchar('\n');
    }
}

static void show_state(cli_t *cli, const Robosim__V1__State *s)
{
    if (cli->json) {
        print_json(s);
        return;
    }
    Robosim__V1__Spec *spec = NULL;
    rsc_get_spec(client(cli), cli->world, &spec, NULL); /* names only: fall back to indices */
    print_state(s, spec);
    rsc_free(spec);
}

static void print_list(const char *label, char **items, size_t n)
{
    printf("%s:", label);
    if (n == 0)
        fputs(" -", stdout);
    for (size_t i = 0; i < n; i++)
        printf(" %s", items[i]);
    putchar('\n');
}

static void print_bounds(double lo, double hi)
{
    printf("[%.10g, %.10g]", lo, hi);
}

static void print_var_specs(const char *label, Robosim__V1__VarSpec **v, size_t n)
{
    printf("  %s:%s\n", label, n ? "" : " -");
    for (size_t i = 0; i < n; i++) {
        printf("    %-14s %-6s ", v[i]->name, v[i]->unit);
        print_bounds(v[i]->lower, v[i]->upper);
        if (v[i]->size > 1)
            printf("  x%" PRIu32, v[i]->size);
        printf("  %s\n", v[i]->doc);
    }
}

static void print_param_specs(const char *indent, Robosim__V1__ParamSpec **p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        printf("%s%-18s =", indent, p[i]->name);
        if (p[i]->n_values == 0)
            fputs(" (none)", stdout);
        for (size_t k = 0; k < p[i]->n_values; k++)
            printf("%s%.10g", k ? ", " : " ", p[i]->values[k]);
        char ubuf[40];
        printf("%s  ", unit_suffix(p[i]->unit, ubuf, sizeof ubuf));
        print_bounds(p[i]->lower, p[i]->upper);
        if (p[i]->min_size != 1 || p[i]->max_size != 1)
            printf("  %" PRIu32 "..%" PRIu32 " values", p[i]->min_size, p[i]->max_size);
        printf("  %s\n", p[i]->doc);
    }
}

static void print_world_info(const Robosim__V1__WorldInfo *w)
{
    printf("world %" PRIu64 "  preset %s  t = %.10g s  step %" PRIu64 "  control_dt %.10g s\n",
           w->world_id, w->preset, w->time, w->step_count, w->control_dt);
}

/* ---- commands ------------------------------------------------------------------------------- */

static void no_args(cli_t *cli, const char *cmd)
{
    if (cli->argc > 0)
        usage_error("%s takes no arguments, got '%s'", cmd, cli->argv[0]);
}

static void ack(cli_t *cli)
{
    if (cli->json) {
        Robosim__V1__Ack a = ROBOSIM__V1__ACK__INIT;
        print_json(&a);
    } else {
        puts("OK");
    }
}

static void cmd_hello(cli_t *cli)
{
    no_args(cli, "hello");
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    if (rsc_hello(client(cli), RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, &h, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(h);
    } else {
        printf("robosim-server %s at %s, protocol %" PRIu32 ".%" PRIu32 " (client %d.%d)\n",
               h->server_version, cli->endpoint, h->major, h->minor, RSC_PROTOCOL_MAJOR,
               RSC_PROTOCOL_MINOR);
        print_list("capabilities", h->capabilities, h->n_capabilities);
        print_list("presets", h->presets, h->n_presets);
        printf("observer stream: %s\n", h->stream_endpoint[0] ? h->stream_endpoint : "off");
        if (h->n_shard_ports) {
            printf("shards: %zu, their own ports:", h->n_shard_ports);
            for (size_t i = 0; i < h->n_shard_ports; i++)
                printf(" %" PRIu32, h->shard_ports[i]);
            printf("\n");
        }
        if (h->build)
            printf("build: commit %s, %s (%s), %s, SUNDIALS %s, %s, %s\n", h->build->commit,
                   h->build->compiler, h->build->fp_flags, h->build->build_type,
                   h->build->sundials, h->build->arch, h->build->libm);
    }
    rsc_free(h);
}

static void cmd_list(cli_t *cli)
{
    no_args(cli, "list");
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *l = NULL;
    if (rsc_list_worlds(client(cli), &l, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(l);
    } else if (l->n_worlds == 0) {
        puts("no worlds (create one with: robosim-cli create diff_drive)");
    } else {
        printf("%-6s %-16s %14s %10s %10s  %s\n", "ID", "PRESET", "TIME", "STEPS", "LEASE",
               "ENTITIES");
        for (size_t i = 0; i < l->n_worlds; i++) {
            const Robosim__V1__WorldInfo *w = l->worlds[i];
            char lease[32];
            if (w->lease_remaining > 0)
                snprintf(lease, sizeof lease, "%.1fs", w->lease_remaining);
            else
                snprintf(lease, sizeof lease, "claimable");
            printf("%-6" PRIu64 " %-16s %14.10g %10" PRIu64 " %10s ", w->world_id, w->preset,
                   w->time, w->step_count, lease);
            for (size_t k = 0; k < w->n_entities; k++)
                printf(" %s", w->entities[k]);
            putchar('\n');
        }
    }
    rsc_free(l);
}

static void cmd_create(cli_t *cli)
{
    const char *preset = NULL, *task = NULL;
    uint64_t seed = 0;
    int token_mode = 0;
    rsc_param_t *params = xcalloc((size_t)cli->argc, sizeof *params);
    size_t nparams = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if (strcmp(cli->argv[i], "--show-token") == 0) {
            token_mode = 1;
        } else if (strcmp(cli->argv[i], "--export") == 0) {
            token_mode = 2;
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--seed"))) {
            seed = parse_u64(v, "--seed");
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--task"))) {
            task = v;
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--param"))) {
            params[nparams++] = parse_param(v);
        } else {
            check_positional("create", cli->argv[i]);
            if (preset)
                usage_error("create takes one preset, got '%s' and '%s' (parameters go with "
                            "--param)",
                            preset, cli->argv[i]);
            preset = cli->argv[i];
        }
    }
    if (!preset && !task)
        usage_error("create needs a preset name or --task NAME, e.g. robosim-cli create "
                    "diff_drive (see robosim-cli hello for the presets and tasks)");
    rsc_error_t err;
    uint64_t id;
    int rc = task ? rsc_create_task_world(client(cli), task, preset, params, nparams, seed, &id,
                                          &err)
                  : rsc_create_world(client(cli), preset, params, nparams, seed, &id, &err);
    if (rc != 0)
        fail(&err);
    if (cli->json) {
        Robosim__V1__Spec *spec = NULL;
        if (rsc_get_spec(client(cli), id, &spec, &err) != 0)
            fail(&err);
        print_json(spec->world);
        rsc_free(spec);
        if (token_mode != 2)
            print_token(id, rsc_world_token(client(cli), id), 0);
    } else {
        if (token_mode != 2)
            printf("%" PRIu64 "\n", id);
        print_token(id, rsc_world_token(client(cli), id), token_mode);
    }
}

static void cmd_claim(cli_t *cli)
{
    int token_mode = 1;
    for (int i = 0; i < cli->argc; i++) {
        if (strcmp(cli->argv[i], "--export") != 0)
            usage_error("claim: unexpected '%s' (claim [--export])", cli->argv[i]);
        token_mode = 2;
    }
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__CreateWorldReply *r = NULL;
    if (rsc_claim(client(cli), cli->world, &r, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(r);
    } else {
        if (token_mode == 1)
            printf("%s\n", r->token);
        else
            print_token(cli->world, r->token, 2);
    }
    if (token_mode == 1 || cli->json)
        print_token(cli->world, r->token, 0);
    rsc_free(r);
}

static void cmd_destroy(cli_t *cli)
{
    if (cli->argc > 1)
        usage_error("destroy takes at most one world id");
    if (cli->argc == 1) {
        check_positional("destroy", cli->argv[0]);
        cli->world = use_world(cli, parse_u64(cli->argv[0], "world id"));
    } else {
        cli->world = world(cli);
    }
    rsc_error_t err;
    if (rsc_destroy_world(client(cli), cli->world, &err) != 0)
        fail(&err);
    ack(cli);
}

static void cmd_spec(cli_t *cli)
{
    no_args(cli, "spec");
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__Spec *s = NULL;
    if (rsc_get_spec(client(cli), cli->world, &s, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(s);
        rsc_free(s);
        return;
    }
    if (s->world)
        print_world_info(s->world);
    for (size_t i = 0; i < s->n_entities; i++) {
        const Robosim__V1__EntitySpec *e = s->entities[i];
        printf("entity %s (%s)", e->name, e->kind);
        if (e->n_base_pose == 3)
            printf("  base pose in the world frame: x = %.10g m, y = %.10g m, theta = %.10g rad",
                   e->base_pose[0], e->base_pose[1], e->base_pose[2]);
        putchar('\n');
        print_var_specs("state", e->state, e->n_state);
        print_var_specs("actuators", e->actuators, e->n_actuators);
        print_var_specs("sensors", e->sensors, e->n_sensors);
        printf("  params:%s\n", e->n_params ? "" : " -");
        print_param_specs("    ", e->params, e->n_params);
        fputs("  ", stdout);
        print_list("modes", e->modes, e->n_modes);
        fputs("  ", stdout);
        print_list("events", e->event_kinds, e->n_event_kinds);
    }
    printf("world params:%s\n", s->n_world_params ? "" : " -");
    print_param_specs("  ", s->world_params, s->n_world_params);
    rsc_free(s);
}

static void cmd_reset(cli_t *cli)
{
    int use_seed = 0;
    uint64_t seed = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v = opt_value(cli->argc, cli->argv, &i, "--seed");
        if (!v)
            usage_error("reset: unexpected '%s' (reset [--seed N])", cli->argv[i]);
        use_seed = 1;
        seed = parse_u64(v, "--seed");
    }
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__State *s = NULL;
    if (rsc_reset(client(cli), cli->world, use_seed, seed, &s, &err) != 0)
        fail(&err);
    show_state(cli, s);
    rsc_free(s);
}

/* --parts state,sensors,events,task,stats: Step.parts (at most `max`). */
static size_t parse_parts(const char *v, Robosim__V1__StatePart *parts, size_t max)
{
    static const char *const names[] = {"", "state", "sensors", "events", "task", "stats"};
    size_t n = 0;
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ",");
        size_t k = 1;
        while (k < sizeof names / sizeof names[0] &&
               (strlen(names[k]) != len || strncmp(names[k], p, len) != 0))
            k++;
        if (k == sizeof names / sizeof names[0] || n == max)
            usage_error("--parts '%s': give some of state, sensors, events, task, stats", v);
        parts[n++] = (Robosim__V1__StatePart)k;
        p += len + (p[len] == ',');
    }
    return n;
}

static void cmd_step(cli_t *cli)
{
    uint32_t steps = 0;
    double duration = 0;
    int have_steps = 0, have_duration = 0;
    rsc_command_t *cmds = xcalloc((size_t)cli->argc, sizeof *cmds);
    size_t ncmds = 0, naction = 0, nparts = 0;
    double *action = NULL;
    Robosim__V1__StatePart parts[8];
    const char **jparams = xcalloc((size_t)cli->argc + 1, sizeof *jparams);
    size_t njparams = 0;
    int jacobian = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if (strcmp(cli->argv[i], "--jacobian") == 0) {
            jacobian = 1;
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--jacobian-param"))) {
            jparams[njparams++] = v;
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--action"))) {
            action = parse_list(v, &naction, "--action");
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--parts"))) {
            nparts = parse_parts(v, parts, sizeof parts / sizeof parts[0]);
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--steps"))) {
            steps = parse_u32(v, "--steps");
            have_steps = 1;
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--duration"))) {
            duration = parse_double(v, "--duration");
            have_duration = 1;
        } else if ((v = opt_value(cli->argc, cli->argv, &i, "--cmd"))) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                usage_error("--cmd '%s' should look like ENTITY=v1,v2", v);
            cmds[ncmds].entity = xstrndup(v, (size_t)(eq - v));
            cmds[ncmds].values = parse_list(eq + 1, &cmds[ncmds].nvalues, v);
            ncmds++;
        } else {
            usage_error("step: unexpected '%s' (see robosim-cli help step)", cli->argv[i]);
        }
    }
    if (have_steps && have_duration)
        usage_error("step takes --steps or --duration, not both");
    if (!have_steps && !have_duration)
        steps = 1;
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__State *s = NULL;
    rsc_step_opts_t o = {.steps = steps, .duration = duration, .cmds = cmds, .ncmds = ncmds,
                         .action = action, .naction = naction, .parts = parts, .nparts = nparts,
                         .jacobian = jacobian, .jacobian_params = jparams,
                         .njacobian_params = njparams};
    if (rsc_step_with(client(cli), cli->world, &o, &s, &err) != 0)
        fail(&err);
    show_state(cli, s);
    if (s->jacobian && !cli->json)
        print_jacobian(s->jacobian);
    rsc_free(s);
}

/* step-batch [--steps N] WORLD[:TOKEN][=v1,v2,...]...: the columnar StepBatch. */
static void cmd_step_batch(cli_t *cli)
{
    uint32_t steps = 1;
    size_t n = 0, width = 0, nvalues = 0;
    uint64_t *ids = xcalloc((size_t)cli->argc + 1, sizeof *ids);
    double **rows = xcalloc((size_t)cli->argc + 1, sizeof *rows);
    size_t *widths = xcalloc((size_t)cli->argc + 1, sizeof *widths);
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if ((v = opt_value(cli->argc, cli->argv, &i, "--steps"))) {
            steps = parse_u32(v, "--steps");
            continue;
        }
        check_positional("step-batch", cli->argv[i]);
        char *arg = xstrndup(cli->argv[i], strlen(cli->argv[i]));
        char *eq = strchr(arg, '='), *colon = strchr(arg, ':');
        if (eq)
            *eq = '\0';
        if (colon && (!eq || colon < eq))
            *colon = '\0';
        else
            colon = NULL;
        ids[n] = use_world(cli, parse_u64(arg, "step-batch WORLD"));
        if (colon && rsc_set_world_token(client(cli), ids[n], colon + 1) != 0)
            usage_error("step-batch: token of world %s is too long", arg);
        if (eq) {
            rows[n] = parse_list(eq + 1, &widths[n], cli->argv[i]);
            nvalues++;
        }
        n++;
    }
    if (n == 0)
        usage_error("step-batch needs worlds: step-batch [--steps N] WORLD[:TOKEN][=v1,v2]...");
    if (nvalues && nvalues != n)
        usage_error("step-batch: give values for every world or for none (%zu of %zu have some)",
                    nvalues, n);
    for (size_t i = 0; nvalues && i < n; i++)
        if (widths[i] != widths[0])
            usage_error("step-batch: world %" PRIu64 " has %zu values, world %" PRIu64
                        " %zu; the worlds are of one shape",
                        ids[i], widths[i], ids[0], widths[0]);
    width = nvalues ? widths[0] : 0;
    double *values = xcalloc(n * width + 1, sizeof *values);
    for (size_t i = 0; nvalues && i < n; i++)
        memcpy(values + i * width, rows[i], width * sizeof *values);
    /* the values are actions when the worlds run a task (the first world's spec says) */
    rsc_error_t err;
    int task = 0;
    if (nvalues) {
        Robosim__V1__Spec *spec = NULL;
        if (rsc_get_spec(client(cli), ids[0], &spec, &err) != 0)
            fail(&err);
        task = spec->task != NULL;
        rsc_free(spec);
    }
    Robosim__V1__BatchArraysReply *r = NULL;
    if (rsc_step_arrays(client(cli), ids, n, steps, task ? NULL : values, task ? 0 : n * width,
                        task ? values : NULL, task ? n * width : 0, &r, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(r);
        rsc_free(r);
        return;
    }
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        int code = i < r->n_codes ? (int)r->codes[i] : -1;
        printf("world %" PRIu64 "  %s", ids[i], code ? rsc_error_name(code) : "OK");
        if (code) {
            for (; e < r->n_errors && r->errors[e]->index < i; e++)
                ;
            if (e < r->n_errors && r->errors[e]->index == i && r->errors[e]->error)
                printf(": %s", r->errors[e]->error->message);
            putchar('\n');
            continue;
        }
        printf("  t = %.10g s  step %" PRIu64 "  events %" PRIu32 "  state", r->time[i],
               r->step_count[i], r->events[i]);
        for (size_t k = 0; k < r->state_size; k++)
            printf(" %.10g", r->state[i * r->state_size + k]);
        if (i < r->n_reward)
            printf("  reward %.10g%s%s", r->reward[i], r->terminated[i] ? "  terminated" : "",
                   r->truncated[i] ? "  truncated" : "");
        putchar('\n');
    }
    rsc_free(r);
}

static void cmd_state(cli_t *cli)
{
    no_args(cli, "state");
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__State *s = NULL;
    if (rsc_get_state(client(cli), cli->world, &s, &err) != 0)
        fail(&err);
    show_state(cli, s);
    rsc_free(s);
}

/* ENTITY v1 v2 ... (used by set-force and target) */
static const char *entity_and_values(cli_t *cli, const char *cmd, double **v, size_t *n)
{
    if (cli->argc < 1)
        usage_error("%s needs an entity and its values, e.g. %s robot 3 3", cmd, cmd);
    check_positional(cmd, cli->argv[0]);
    *n = (size_t)cli->argc - 1;
    *v = xcalloc(*n, sizeof **v);
    for (size_t i = 0; i < *n; i++)
        (*v)[i] = parse_double(cli->argv[i + 1], cmd);
    return cli->argv[0];
}

static void cmd_set_force(cli_t *cli)
{
    double *v;
    size_t n;
    const char *entity = entity_and_values(cli, "set-force", &v, &n);
    cli->world = world(cli);
    rsc_error_t err;
    if (rsc_set_force(client(cli), cli->world, entity, v, n, &err) != 0)
        fail(&err);
    ack(cli);
}

static void cmd_wrench(cli_t *cli)
{
    if (cli->argc < 2)
        usage_error("wrench needs an entity and a body: wrench ENTITY BODY v1 v2 ...");
    check_positional("wrench", cli->argv[0]);
    check_positional("wrench", cli->argv[1]);
    size_t n = (size_t)cli->argc - 2;
    double *v = xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = parse_double(cli->argv[i + 2], cli->argv[i + 2]);
    cli->world = world(cli);
    rsc_error_t err;
    if (rsc_apply_wrench(client(cli), cli->world, cli->argv[0], cli->argv[1], v, n, &err) != 0)
        fail(&err);
    ack(cli);
}

static void cmd_target(cli_t *cli)
{
    double *v;
    size_t n;
    const char *entity = entity_and_values(cli, "target", &v, &n);
    cli->world = world(cli);
    rsc_error_t err;
    if (rsc_set_target(client(cli), cli->world, entity, v, n, &err) != 0)
        fail(&err);
    ack(cli);
}

static void cmd_set_params(cli_t *cli)
{
    if (cli->argc < 1)
        usage_error("set-params needs at least one entity.name=v1,v2");
    rsc_param_t *params = xcalloc((size_t)cli->argc, sizeof *params);
    for (int i = 0; i < cli->argc; i++) {
        check_positional("set-params", cli->argv[i]);
        params[i] = parse_param(cli->argv[i]);
    }
    cli->world = world(cli);
    rsc_error_t err;
    if (rsc_set_params(client(cli), cli->world, params, (size_t)cli->argc, &err) != 0)
        fail(&err);
    ack(cli);
}

/* An actuator given by index or by name (looked up in the spec). */
static uint32_t actuator_index(cli_t *cli, const char *entity, const char *a)
{
    if (*a >= '0' && *a <= '9')
        return parse_u32(a, "ACTUATOR");
    rsc_error_t err;
    Robosim__V1__Spec *spec = NULL;
    if (rsc_get_spec(client(cli), cli->world, &spec, &err) != 0)
        fail(&err);
    const Robosim__V1__EntitySpec *es = entity_spec(spec, entity);
    long found = -1;
    for (size_t i = 0; es && i < es->n_actuators && found < 0; i++)
        if (strcmp(es->actuators[i]->name, a) == 0)
            found = (long)i;
    rsc_free(spec);
    if (!es)
        die(1, "NOT_FOUND", "world %" PRIu64 " has no entity '%s' (see robosim-cli spec)",
            cli->world, entity);
    if (found < 0)
        die(1, "NOT_FOUND", "entity '%s' has no actuator '%s' (see robosim-cli spec)", entity, a);
    return (uint32_t)found;
}

static void cmd_schedule(cli_t *cli)
{
    if (cli->argc < 2)
        usage_error("schedule needs ENTITY ACTUATOR [t0:v0 t1:v1 ...]");
    check_positional("schedule", cli->argv[0]);
    check_positional("schedule", cli->argv[1]);
    size_t n = (size_t)cli->argc - 2;
    double *t = xcalloc(n, sizeof *t), *v = xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        const char *knot = cli->argv[i + 2];
        const char *colon = strchr(knot, ':');
        if (!colon)
            usage_error("schedule knot '%s' should look like TIME:VALUE", knot);
        t[i] = parse_double(xstrndup(knot, (size_t)(colon - knot)), knot);
        v[i] = parse_double(colon + 1, knot);
    }
    cli->world = world(cli);
    uint32_t a = actuator_index(cli, cli->argv[0], cli->argv[1]);
    rsc_error_t err;
    if (rsc_set_schedule(client(cli), cli->world, cli->argv[0], a, t, v, n, &err) != 0)
        fail(&err);
    ack(cli);
}

static void cmd_workspace(cli_t *cli)
{
    const char *entity = NULL;
    uint32_t samples = 0;
    double *q = xcalloc((size_t)cli->argc * 2, sizeof *q);
    size_t nq = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if ((v = opt_value(cli->argc, cli->argv, &i, "--samples"))) {
            samples = parse_u32(v, "--samples");
            continue;
        }
        check_positional("workspace", cli->argv[i]);
        if (!entity) {
            entity = cli->argv[i];
            continue;
        }
        size_t n;
        double *xy = parse_list(cli->argv[i], &n, cli->argv[i]);
        if (n != 2)
            usage_error("workspace query point '%s' should be x,y", cli->argv[i]);
        q[2 * nq] = xy[0];
        q[2 * nq + 1] = xy[1];
        nq++;
    }
    if (!entity)
        usage_error("workspace needs an entity: workspace ENTITY [--samples N] [x,y ...]");
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__WorkspaceReply *w = NULL;
    if (rsc_get_workspace(client(cli), cli->world, entity, samples, q, nq, &w, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(w);
    } else {
        printf("boundary: %zu points\n", w->n_boundary / 2);
        for (size_t i = 0; i + 1 < w->n_boundary; i += 2)
            printf("  %.10g %.10g\n", w->boundary[i], w->boundary[i + 1]);
        for (size_t i = 0; i < nq; i++)
            printf("(%.10g, %.10g): %s\n", q[2 * i], q[2 * i + 1],
                   i < w->n_reachable ? (w->reachable[i] ? "reachable" : "unreachable")
                                      : "no answer");
    }
    rsc_free(w);
}

/* A number or [-]pi (for monte-carlo's bounds). */
static double parse_num_pi(const char *s, const char *what)
{
    if (!strcmp(s, "pi") || !strcmp(s, "-pi"))
        return s[0] == '-' ? -M_PI : M_PI;
    return parse_double(s, what);
}

/* ITEM~DIST(a,b), e.g. arm.theta0[0]~uniform(-pi,pi). */
static rsc_sampler_t parse_sampler(const char *v)
{
    const char *tilde = strchr(v, '~'), *open = tilde ? strchr(tilde, '(') : NULL;
    const char *comma = open ? strchr(open, ',') : NULL, *close = comma ? strchr(comma, ')') : NULL;
    if (!close || close[1] || tilde == v)
        usage_error("--sample '%s' should look like ITEM~DIST(a,b), e.g. "
                    "'arm.theta0[0]~uniform(-pi,pi)'", v);
    rsc_sampler_t s;
    s.item = xstrndup(v, (size_t)(tilde - v));
    s.dist = xstrndup(tilde + 1, (size_t)(open - tilde - 1));
    s.a = parse_num_pi(xstrndup(open + 1, (size_t)(comma - open - 1)), v);
    s.b = parse_num_pi(xstrndup(comma + 1, (size_t)(close - comma - 1)), v);
    return s;
}

static void cmd_monte_carlo(cli_t *cli)
{
    uint32_t runs = 0;
    uint64_t seed = 0, first = 0;
    double duration = 0;
    rsc_sampler_t *smp = xcalloc((size_t)cli->argc + 1, sizeof *smp);
    const char **ret = xcalloc((size_t)cli->argc + 1, sizeof *ret);
    size_t ns = 0, nr = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if ((v = opt_value(cli->argc, cli->argv, &i, "--runs")))
            runs = parse_u32(v, "--runs");
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--seed")))
            seed = parse_u64(v, "--seed");
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--duration")))
            duration = parse_double(v, "--duration");
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--first-run")))
            first = parse_u64(v, "--first-run");
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--sample")))
            smp[ns++] = parse_sampler(v);
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--return")))
            ret[nr++] = v;
        else
            usage_error("monte-carlo: unexpected '%s' (monte-carlo --runs N [--seed S] "
                        "--duration D --sample ITEM~DIST(a,b)... --return ITEM...)",
                        cli->argv[i]);
    }
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__MonteCarloReply *r = NULL;
    if (rsc_monte_carlo(client(cli), cli->world, runs, seed, first, duration, smp, ns, ret, nr,
                        &r, &err) != 0)
        fail(&err);
    if (cli->json) {
        print_json(r);
    } else {
        printf("%u runs of %.10g s, seed %llu:", r->runs, r->time, (unsigned long long)seed);
        for (size_t j = 0; j < r->n_samplers; j++)
            printf(" %s", r->samplers[j]);
        printf(" ->");
        for (size_t k = 0; k < r->n_returns; k++)
            printf(" %s", r->returns[k]);
        printf("\n");
        for (size_t i = 0; i < r->runs; i++) {
            printf("%llu:", (unsigned long long)(first + i));
            for (size_t j = 0; j < r->n_samplers; j++)
                printf(" %.17g", r->initial[i * r->n_samplers + j]);
            printf(" ->");
            for (size_t k = 0; k < r->n_returns; k++)
                printf(" %.17g", r->final[i * r->n_returns + k]);
            printf("\n");
        }
    }
    rsc_free(r);
}

/* The whole of FILE in a tracked buffer. */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(1, "IO", "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *grown = realloc(buf, cap *= 2);
        if (!grown)
            free(buf);
        buf = grown;
    }
    int bad = ferror(f);
    fclose(f);
    track(buf);
    if (bad)
        die(1, "IO", "cannot read '%s'", path);
    *len = n;
    return buf;
}

static void cmd_snapshot(cli_t *cli)
{
    if (cli->argc != 1)
        usage_error("snapshot takes one file name: snapshot FILE");
    check_positional("snapshot", cli->argv[0]);
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__State *s = NULL;
    if (rsc_get_snapshot(client(cli), cli->world, &s, &err) != 0)
        fail(&err);
    FILE *f = fopen(cli->argv[0], "wb");
    int ok = f && fwrite(s->snapshot.data, 1, s->snapshot.len, f) == s->snapshot.len;
    if (f && fclose(f) != 0)
        ok = 0;
    size_t len = s->snapshot.len;
    double t = s->time;
    rsc_free(s);
    if (!ok)
        die(1, "IO", "cannot write '%s': %s", cli->argv[0], strerror(errno));
    if (!cli->json)
        printf("world %" PRIu64 " at t = %.10g s: %zu bytes to %s\n", cli->world, t, len,
               cli->argv[0]);
}

static void cmd_restore(cli_t *cli)
{
    if (cli->argc != 1)
        usage_error("restore takes one file name: restore FILE");
    check_positional("restore", cli->argv[0]);
    size_t len;
    unsigned char *b = read_file(cli->argv[0], &len);
    cli->world = world(cli);
    rsc_error_t err;
    Robosim__V1__State *s = NULL;
    if (rsc_set_state(client(cli), cli->world, b, len, &s, &err) != 0)
        fail(&err);
    show_state(cli, s);
    rsc_free(s);
}

static void cmd_motion_spec(cli_t *cli)
{
    if (cli->argc != 1)
        usage_error("motion-spec takes a file name, --show or --clear");
    cli->world = world(cli);
    rsc_error_t err;
    if (!strcmp(cli->argv[0], "--clear")) {
        if (rsc_clear_motion_spec(client(cli), cli->world, &err) != 0)
            fail(&err);
        if (!cli->json)
            printf("world %" PRIu64 ": motion specification cleared\n", cli->world);
        return;
    }
    if (!strcmp(cli->argv[0], "--show")) {
        Robosim__V1__MotionSpecReply *r = NULL;
        if (rsc_get_motion_spec(client(cli), cli->world, &r, &err) != 0)
            fail(&err);
        if (cli->json) {
            print_json(r);
        } else if (!r->loaded) {
            printf("world %" PRIu64 ": no motion specification\n", cli->world);
        } else {
            printf("world %" PRIu64 ": motion specification of %zu bytes, active motion '%s'%s\n",
                   cli->world, strlen(r->document), r->active_motion,
                   r->replaces_commands ? " (replaces the agent's commands)" : "");
            for (size_t i = 0; i < r->n_evaluators; i++)
                printf("  evaluator %s\n", r->evaluators[i]);
            for (size_t i = 0; i < r->n_controllers; i++)
                printf("  controller %s\n", r->controllers[i]);
        }
        rsc_free(r);
        return;
    }
    check_positional("motion-spec", cli->argv[0]);
    size_t len;
    unsigned char *b = read_file(cli->argv[0], &len);
    char *doc = malloc(len + 1);
    if (!doc)
        die(1, "IO", "out of memory");
    memcpy(doc, b, len);
    doc[len] = 0;
    if (rsc_load_motion_spec(client(cli), cli->world, doc, &err) != 0)
        fail(&err);
    if (!cli->json)
        printf("world %" PRIu64 ": motion specification %s loaded\n", cli->world, cli->argv[0]);
    free(doc);
}

static void cmd_fork(cli_t *cli)
{
    const char *from = NULL;
    int token_mode = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if (strcmp(cli->argv[i], "--show-token") == 0)
            token_mode = 1;
        else if (strcmp(cli->argv[i], "--export") == 0)
            token_mode = 2;
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--from")))
            from = v;
        else
            usage_error("fork: unexpected '%s' (fork [--from FILE] [--show-token | --export])",
                        cli->argv[i]);
    }
    size_t len = 0;
    unsigned char *b = from ? read_file(from, &len) : NULL;
    cli->world = world(cli);
    rsc_error_t err;
    uint64_t id;
    if (rsc_fork_world(client(cli), cli->world, b, len, &id, &err) != 0)
        fail(&err);
    if (token_mode != 2)
        printf("%" PRIu64 "\n", id);
    print_token(id, rsc_world_token(client(cli), id), token_mode);
}

/* A stream endpoint the CLI can connect to: a wildcard host becomes the server's host. */
static void stream_target(const char *advertised, const char *server, char *out, size_t n)
{
    const char *host = strstr(advertised, "://");
    const char *port = strrchr(advertised, ':');
    int wildcard = host && port && (!strncmp(host + 3, "0.0.0.0:", 8) || !strncmp(host + 3, "*:", 2) ||
                                     !strncmp(host + 3, "[::]:", 5));
    const char *shost = strstr(server, "://"), *sport = strrchr(server, ':');
    if (wildcard && shost && sport && sport > shost + 3)
        snprintf(out, n, "%.*s%s", (int)(sport - server), server, port);
    else
        snprintf(out, n, "%s", advertised);
}

static void cmd_watch(cli_t *cli)
{
    int all = 0;
    uint64_t count = 0;
    double seconds = 0;
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if (strcmp(cli->argv[i], "--all") == 0)
            all = 1;
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--count")))
            count = parse_u64(v, "--count");
        else if ((v = opt_value(cli->argc, cli->argv, &i, "--seconds")))
            seconds = parse_double(v, "--seconds");
        else
            usage_error("watch: unexpected '%s' (watch [--all] [--count N] [--seconds S])",
                        cli->argv[i]);
    }
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    if (rsc_hello(client(cli), RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, &h, &err) != 0)
        fail(&err);
    char ep[300];
    stream_target(h->stream_endpoint, cli->endpoint, ep, sizeof ep);
    int off = !h->stream_endpoint[0];
    rsc_free(h);
    if (off)
        die(1, "FAILED_PRECONDITION", "the server at %s runs without an observer stream "
                                      "(started with --no-stream)",
            cli->endpoint);
    char topic[48] = "world/";
    if (!all) {
        cli->world = world(cli);
        snprintf(topic, sizeof topic, "world/%" PRIu64 "/", cli->world);
    }
    void *ctx = zmq_ctx_new(), *sub = zmq_socket(ctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, topic, strlen(topic));
    rsc_options_t o = connect_options(cli); /* the stream runs CURVE when the server does */
    int curve_rc = rsc_apply_curve(sub, &o, &err);
    memset(&o, 0, sizeof o);
    if (curve_rc != 0) {
        zmq_close(sub);
        zmq_ctx_term(ctx);
        fail(&err);
    }
    if (zmq_connect(sub, ep) != 0) {
        zmq_close(sub);
        zmq_ctx_term(ctx);
        die(1, "UNREACHABLE", "cannot connect to the observer stream %s", ep);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t seen = 0, last_seq = 0;
    while (!count || seen < count) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (seconds > 0 && el >= seconds)
            break;
        zmq_pollitem_t it = {sub, 0, ZMQ_POLLIN, 0};
        long wait = seconds > 0 ? (long)((seconds - el) * 1000) + 1 : 1000;
        if (zmq_poll(&it, 1, wait) <= 0)
            continue;
        zmq_msg_t part;
        zmq_msg_init(&part);
        zmq_msg_recv(&part, sub, 0); /* the topic */
        int more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        if (!more)
            continue;
        zmq_msg_init(&part);
        zmq_msg_recv(&part, sub, 0);
        Robosim__V1__StreamFrame *f =
            robosim__v1__stream_frame__unpack(NULL, zmq_msg_size(&part), zmq_msg_data(&part));
        zmq_msg_close(&part);
        if (!f || !f->state) {
            robosim__v1__stream_frame__free_unpacked(f, NULL);
            continue;
        }
        seen++;
        if (cli->json) {
            print_json(f);
        } else {
            printf("world %" PRIu64 "  seq %" PRIu64 "%s  t = %.10g s  step %" PRIu64 "  events %zu",
                   f->world_id, f->seq, !all && last_seq && f->seq != last_seq + 1 ? " (gap)" : "",
                   f->state->time, f->state->step_count, f->state->n_events);
            for (size_t e = 0; e < f->state->n_entities; e++)
                printf("  %s:%s", f->state->entities[e]->name, f->state->entities[e]->mode);
            putchar('\n');
        }
        fflush(stdout);
        last_seq = f->seq;
        robosim__v1__stream_frame__free_unpacked(f, NULL);
    }
    zmq_close(sub);
    zmq_ctx_term(ctx);
}

/* Create PREFIX.key and PREFIX.key_secret (never overwriting either) and write them. */
static FILE *create_exclusive(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return NULL;
    if (fchmod(fd, mode) != 0) { /* the umask may have taken bits; 0600 keeps only ours */
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f)
        close(fd);
    return f;
}

static void cmd_keygen(cli_t *cli)
{
    const char *prefix = "robosim";
    for (int i = 0; i < cli->argc; i++) {
        const char *v;
        if ((v = opt_value(cli->argc, cli->argv, &i, "--out")) && *v)
            prefix = v;
        else
            usage_error("keygen: unexpected '%s' (keygen [--out PREFIX])", cli->argv[i]);
    }
    char pub[RSC_KEY_LEN + 1], sec[RSC_KEY_LEN + 1];
    if (!zmq_has("curve") || zmq_curve_keypair(pub, sec) != 0)
        die(1, "UNIMPLEMENTED", "this libzmq cannot make CURVE keys (built without libsodium?)");
    size_t n = strlen(prefix) + sizeof ".key_secret";
    char *pub_path = xcalloc(n, 1), *sec_path = xcalloc(n, 1);
    snprintf(pub_path, n, "%s.key", prefix);
    snprintf(sec_path, n, "%s.key_secret", prefix);
    FILE *fs = create_exclusive(sec_path, 0600);
    if (!fs)
        die(1, "IO", "cannot create %s: %s (keygen never overwrites a key; pick another --out)",
            sec_path, strerror(errno));
    FILE *fp = create_exclusive(pub_path, 0644);
    if (!fp) {
        int e = errno;
        fclose(fs);
        unlink(sec_path);
        die(1, "IO", "cannot create %s: %s (keygen never overwrites a key; pick another --out)",
            pub_path, strerror(e));
    }
    int bad = fprintf(fs,
                      "#   ZeroMQ CURVE **Secret** Certificate, made by robosim-cli keygen\n"
                      "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n"
                      "#   For robosim-server --curve-secret-file or a client's --client-key-file;\n"
                      "#   the public key alone is in %s.\n"
                      "\n"
                      "metadata\n"
                      "curve\n"
                      "    public-key = \"%s\"\n"
                      "    secret-key = \"%s\"\n",
                      pub_path, pub, sec) < 0;
    bad |= fclose(fs) != 0;
    memset(sec, 0, sizeof sec);
    bad |= fprintf(fp,
                   "#   ZeroMQ CURVE Public Certificate, made by robosim-cli keygen\n"
                   "#   A client's: its public-key goes into the server's --authorized-keys with\n"
                   "#   a role. A server's: its clients pass this file as --server-key.\n"
                   "\n"
                   "metadata\n"
                   "curve\n"
                   "    public-key = \"%s\"\n",
                   pub) < 0;
    bad |= fclose(fp) != 0;
    if (bad) {
        unlink(sec_path);
        unlink(pub_path);
        die(1, "IO", "cannot write %s and %s", sec_path, pub_path);
    }
    printf("%s\n", pub);
    fprintf(stderr,
            "robosim-cli: wrote %s (public key, printed above) and %s (key pair, mode 0600)\n",
            pub_path, sec_path);
}

/* ---- the command table: dispatch, usage and help come from it (as redis-cli's commandHelp) -- */

static void cmd_help(cli_t *cli);

/* ---- any operation, from the protocol's descriptors ----------------------------------------- */

/* A field's type as `call --list` shows it: "uint32", "[double]", "{ActuatorCommand}", ... */
static void field_type(const ProtobufCFieldDescriptor *f, char *buf, size_t n)
{
    static const char *const names[] = {
        [PROTOBUF_C_TYPE_INT32] = "int32",     [PROTOBUF_C_TYPE_SINT32] = "sint32",
        [PROTOBUF_C_TYPE_SFIXED32] = "sfixed32", [PROTOBUF_C_TYPE_INT64] = "int64",
        [PROTOBUF_C_TYPE_SINT64] = "sint64",   [PROTOBUF_C_TYPE_SFIXED64] = "sfixed64",
        [PROTOBUF_C_TYPE_UINT32] = "uint32",   [PROTOBUF_C_TYPE_FIXED32] = "fixed32",
        [PROTOBUF_C_TYPE_UINT64] = "uint64",   [PROTOBUF_C_TYPE_FIXED64] = "fixed64",
        [PROTOBUF_C_TYPE_FLOAT] = "float",     [PROTOBUF_C_TYPE_DOUBLE] = "double",
        [PROTOBUF_C_TYPE_BOOL] = "bool",       [PROTOBUF_C_TYPE_ENUM] = "enum",
        [PROTOBUF_C_TYPE_STRING] = "string",   [PROTOBUF_C_TYPE_BYTES] = "bytes",
        [PROTOBUF_C_TYPE_MESSAGE] = "message",
    };
    const char *name = names[f->type];
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        name = ((const ProtobufCMessageDescriptor *)f->descriptor)->short_name;
    else if (f->type == PROTOBUF_C_TYPE_ENUM)
        name = ((const ProtobufCEnumDescriptor *)f->descriptor)->short_name;
    snprintf(buf, n, f->label == PROTOBUF_C_LABEL_REPEATED ? "[%s]" : "%s", name);
}

/* One line per operation: its name, its message and that message's fields with their types. */
static void list_ops(FILE *f)
{
    const ProtobufCFieldDescriptor *op;
    for (size_t i = 0; (op = rsc_op_at(i)); i++) {
        const ProtobufCMessageDescriptor *md = op->descriptor;
        fprintf(f, "  %-18s %s {", op->name, md->short_name);
        for (unsigned k = 0; k < md->n_fields; k++) {
            char type[80];
            field_type(&md->fields[k], type, sizeof type);
            fprintf(f, "%s%s: %s", k ? ", " : " ", md->fields[k].name, type);
        }
        fputs(md->n_fields ? " }\n" : "}\n", f);
    }
}

static void cmd_call(cli_t *cli)
{
    if (cli->argc == 1 && strcmp(cli->argv[0], "--list") == 0) {
        list_ops(stdout);
        return;
    }
    if (cli->argc < 1 || cli->argc > 2)
        usage_error("call needs an operation and at most one JSON object, e.g. call get_state "
                    "'{\"snapshot\": false}'; robosim-cli call --list lists the operations");
    const char *name = cli->argv[0];
    const ProtobufCFieldDescriptor *op = rsc_op_find(name);
    if (!op) {
        fflush(stdout);
        fprintf(stderr, "robosim-cli: USAGE: no operation '%s'; the operations:\n", name);
        list_ops(stderr);
        free_all();
        exit(EXIT_USAGE);
    }
    const char *text = cli->argc == 2 ? cli->argv[1] : "{}";
    if (strcmp(text, "-") == 0) { /* the JSON on stdin */
        size_t len;
        unsigned char *in = read_file("/dev/stdin", &len);
        char *s = xcalloc(len + 1, 1);
        memcpy(s, in, len);
        text = s;
    }
    char why[512];
    ProtobufCMessage *msg = rsc_json_read(text, op->descriptor, why, sizeof why);
    if (!msg)
        usage_error("call %s: %s", op->name, why);
    const char *w = cli->world_arg ? cli->world_arg : getenv("ROBOSIM_WORLD");
    uint64_t id = w && *w ? use_world(cli, parse_u64(w, "--world")) : 0;
    rsc_error_t err;
    ProtobufCMessage *reply = NULL;
    int rc = rsc_call_op(client(cli), id, op->name, msg, &reply, &err);
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc != 0)
        fail(&err);
    print_json(reply);
    rsc_free(reply);
}

typedef struct command {
    const char *name;
    void (*run)(cli_t *cli);
    const char *args;    /* the synopsis after the name */
    const char *summary; /* what it does, one paragraph (wrapped when printed) */
    int changes_world;   /* needs the world's controller token */
} command_t;

static const command_t commands[] = {
    {"hello", cmd_hello, "", "server version, protocol, capabilities, presets, tasks", 0},
    {"list", cmd_list, "", "the worlds on the server", 0},
    {"create", cmd_create, "[PRESET] [--task NAME] [--seed N] [--param P]... [--show-token | --export]",
     "create a world (from a preset, or running a task: a Gym-style episode driven with step "
     "--action; its preset may then be left out); prints its id (W=$(robosim-cli create "
     "diff_drive)), and on stderr the export line of its controller token; --show-token prints "
     "the token as a second line, --export prints 'export ROBOSIM_WORLD=ID ROBOSIM_TOKEN=T' "
     "instead (eval \"$(robosim-cli create diff_drive --export)\"). P is entity.name=v1,v2,... "
     "(world parameters: .name=v or name=v)", 0},
    {"claim", cmd_claim, "[--export]",
     "take control of the world once its controller's lease has lapsed (world 1 at start-up, "
     "or a silent one); prints the new token (--export: as for create)", 0},
    {"destroy", cmd_destroy, "[ID]", "destroy the world (ID or --world)", 1},
    {"spec", cmd_spec, "",
     "entities (with their base poses in the world frame), variables, actuators, sensors, "
     "parameters; the task's observation and action when the world runs one", 0},
    {"reset", cmd_reset, "[--seed N]", "back to the initial state (reseeded with N if given)", 1},
    {"step", cmd_step,
     "[--steps N | --duration S] [--cmd ENTITY=v1,v2]... [--action v1,v2,...] [--parts P,...] "
     "[--jacobian] [--jacobian-param ENTITY.PARAM]...",
     "apply the commands (or, in a task world, the action), then advance N control steps or S "
     "seconds (default: 1 step); prints the state, events and task step. --parts narrows the "
     "reply to some of state, sensors, events, task, stats; --jacobian also prints the Step's "
     "derivatives with respect to the state before it, the commands and each --jacobian-param", 1},
    {"step-batch", cmd_step_batch, "[--steps N] WORLD[:TOKEN][=v1,v2,...]...",
     "step many worlds of one shape in one columnar request (StepBatch.arrays), N control steps "
     "each (default 1); each world's values are its action (task worlds) or all its actuator "
     "commands in spec order (give values for every world or none: none holds the commands); "
     "TOKEN defaults to --token for every world. One line per world: its code, time, step "
     "count, state row, and reward and episode flags for task worlds", 1},
    {"state", cmd_state, "", "the current state", 0},
    {"set-force", cmd_set_force, "ENTITY v1 v2 ...",
     "hold these actuator commands (one per actuator): the general actuator command, whatever "
     "the actuators are (forces, wheel speeds, joint targets)", 1},
    {"set-params", cmd_set_params, "P ...", "change parameters, P as for create", 1},
    {"schedule", cmd_schedule, "ENTITY ACTUATOR t0:v0 t1:v1 ...",
     "piecewise-linear schedule for one actuator (index or name); no knots removes it", 1},
    {"target", cmd_target, "ENTITY v1 v2 ...",
     "set commands from a task-space target (x y elbow)", 1},
    {"workspace", cmd_workspace, "ENTITY [--samples N] [x,y ...]",
     "workspace boundary points and reachability of points", 0},
    {"monte-carlo", cmd_monte_carlo,
     "--runs N [--seed S] [--first-run K] --duration D --sample ITEM~DIST(a,b)... --return ITEM...",
     "N runs of the world from drawn initial conditions (Klamp't's monteCarloSim), on the "
     "server's workers: ITEM an initial-condition parameter (arm.theta0[0]), DIST uniform (in "
     "[a, b)) or normal (mean a, deviation b), a and b numbers or [-]pi; --return a state "
     "variable or sensor (arm.theta1); one line per run: draws -> returns; runs K .. K+N-1 "
     "(split a large N over calls with --first-run)", 0},
    {"wrench", cmd_wrench, "ENTITY BODY v1 v2 ...",
     "an external wrench on a body during the next control step only (finger finger F; arm "
     "end_effector fx fy tau)", 1},
    {"snapshot", cmd_snapshot, "FILE",
     "save the world's snapshot (opaque, authenticated by the server's key: it restores on "
     "that server, or on one sharing its --snapshot-key-file) to FILE", 0},
    {"restore", cmd_restore, "FILE", "put the world back to a snapshot saved with snapshot", 1},
    {"motion-spec", cmd_motion_spec, "FILE | --show | --clear",
     "load a JSON-LD motion specification on the world (it runs at every control step; "
     "examples/specs), show or clear it (loading and clearing need the token)", 1},
    {"fork", cmd_fork, "[--from FILE] [--show-token | --export]",
     "a new world from the world now (or from FILE); prints its id and token as create does; "
     "you control it", 0},
    {"watch", cmd_watch, "[--all] [--count N] [--seconds S]",
     "follow the world on the observer stream (--all: every world): one line per frame "
     "(--json: the StreamFrame), until N frames or S seconds (default: until killed)", 0},
    {"keygen", cmd_keygen, "[--out PREFIX]",
     "make a CURVE key pair (no server needed): writes PREFIX.key (the public key, to give "
     "away) and PREFIX.key_secret (both keys, mode 0600; never overwritten), default PREFIX "
     "robosim; prints the public key. ZeroMQ certificate format (CZMQ zcert, pyzmq zmq.auth): "
     "lines public-key = \"<40 Z85>\" and secret-key = \"<40 Z85>\"", 0},
    {"call", cmd_call, "OP [JSON | -] | --list",
     "any operation of the protocol by name (get_state, GetState or get-state), its request "
     "built from the JSON object (default {}; - reads it from stdin) by the proto's field "
     "names, on --world / $ROBOSIM_WORLD with its token; prints the reply as JSON. --list: the "
     "operations and their fields, from the protocol's descriptors", 0},
    {"help", cmd_help, "[COMMAND]", "this text, or one command's", 0},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* One command's entry: "  name args" then its summary wrapped at column 33 (next line when
 * the synopsis is wider). */
static void print_command(FILE *f, const command_t *c)
{
    enum { COL = 33, WIDTH = 100 };
    int used = fprintf(f, "  %s%s%s", c->name, c->args[0] ? " " : "", c->args);
    if (used > COL - 2) {
        fputc('\n', f);
        used = 0;
    }
    const char *p = c->summary;
    while (*p) {
        fprintf(f, "%*s", COL - used, "");
        size_t room = WIDTH - COL, n = strlen(p);
        if (n > room) {
            n = room;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = room;
        }
        fprintf(f, "%.*s\n", (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
        used = 0;
    }
}

static void usage(FILE *f)
{
    fputs(usage_head, f);
    fputs("\nCommands:\n", f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        print_command(f, &commands[i]);
    fputs("\nCommands that change a world (", f);
    const char *sep = "";
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].changes_world) {
            fprintf(f, "%s%s", sep, commands[i].name);
            sep = ", ";
        }
    fputs(") need its controller token (--token or $ROBOSIM_TOKEN); reading needs none.\n\n", f);
    fputs(usage_tail, f);
}

static const command_t *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void cmd_help(cli_t *cli)
{
    if (cli->argc > 1)
        usage_error("help takes at most one command name");
    if (cli->argc == 0) {
        usage(stdout);
        return;
    }
    const command_t *c = find_command(cli->argv[0]);
    if (!c)
        usage_error("no command '%s'; try robosim-cli --help", cli->argv[0]);
    printf("usage: robosim-cli [OPTIONS] %s%s%s\n\n", c->name, c->args[0] ? " " : "", c->args);
    print_command(stdout, c);
    if (c->changes_world)
        puts("\nIt changes the world: it needs its controller token (--token or $ROBOSIM_TOKEN).");
}

int main(int argc, char **argv)
{
    cli_t cli = {0};
    current = &cli;
    cli.endpoint = getenv("ROBOSIM_ENDPOINT");
    if (!cli.endpoint || !*cli.endpoint)
        cli.endpoint = DEFAULT_ENDPOINT;
    cli.timeout_ms = DEFAULT_TIMEOUT_MS;
    cli.token = getenv("ROBOSIM_TOKEN");
    if (cli.token && !*cli.token)
        cli.token = NULL;
    cli.server_key = getenv("ROBOSIM_SERVER_KEY");
    cli.client_key_file = getenv("ROBOSIM_CLIENT_KEY_FILE");

    /* global options anywhere; the rest is the command and its arguments */
    char **rest = xcalloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0, options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (options_done) {
            rest[nrest++] = argv[i];
        } else if (strcmp(a, "--") == 0) {
            options_done = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            free_all();
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("robosim-cli %s (protocol %d.%d)\n", ROBOSIM_VERSION, RSC_PROTOCOL_MAJOR,
                   RSC_PROTOCOL_MINOR);
            free_all();
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            cli.json = 1;
        } else if ((v = opt_value(argc, argv, &i, "--endpoint"))) {
            cli.endpoint = v;
        } else if ((v = opt_value(argc, argv, &i, "--world"))) {
            cli.world_arg = v;
        } else if ((v = opt_value(argc, argv, &i, "--server-key"))) {
            cli.server_key = v;
        } else if ((v = opt_value(argc, argv, &i, "--client-key-file"))) {
            cli.client_key_file = v;
        } else if ((v = opt_value(argc, argv, &i, "--token"))) {
            cli.token = *v ? v : NULL;
        } else if ((v = opt_value(argc, argv, &i, "--timeout"))) {
            uint64_t t = parse_u64(v, "--timeout");
            if (t == 0 || t > 24u * 3600 * 1000)
                usage_error("--timeout must be between 1 and 86400000 ms, got %s", v);
            cli.timeout_ms = (int)t;
        } else {
            rest[nrest++] = argv[i];
        }
    }
    if (nrest == 0)
        usage_error("no command given; try robosim-cli --help");
    if (is_option(rest[0]))
        usage_error("unknown option '%s'; try robosim-cli --help", rest[0]);

    const command_t *cmd = find_command(rest[0]);
    if (!cmd)
        usage_error("unknown command '%s'; try robosim-cli --help", rest[0]);
    cli.argc = nrest - 1;
    cli.argv = rest + 1;
    cmd->run(&cli);

    if (fflush(stdout) != 0)
        die(1, "IO", "cannot write to stdout");
    free_all();
    return 0;
}
