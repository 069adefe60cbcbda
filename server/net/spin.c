/* A loop's wait for its next request: polled for a while before it sleeps (--spin-us), for
 * the one-loop server (loop.c) and each shard (shards.c). See server_internal.h and
 * docs/design.md, "Measurements behind choices in the loop". */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "server_internal.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <zmq.h>

/* A loop's record of its waits: each loop its own, no state shared between shards. */
struct rs_spin {
    double wait_from;   /* when the loop last began waiting for a request, and ... */
    double gap_avg;     /* ... the running mean (1/8 weight) of how long it waited: below
                           cfg.spin_seconds it polls rather than sleeps */
    double load_at;     /* when it last read the machine's running tasks, and ... */
    double running_avg; /* ... their running mean (contended) ... */
    int load_cores;     /* ... against the cores it may use (rs_cores_usable: read once) */
};

rs_spin_t *rs_spin_new(void)
{
    return calloc(1, sizeof(rs_spin_t));
}

void rs_spin_destroy(rs_spin_t **p)
{
    free(*p);
    *p = NULL;
}

/* The CPU quota in file `dir`/`name` (and, for cgroup v1, its period in `dir`/`period`), in
 * cores; 0 when the file is missing or sets no limit. v2's cpu.max reads "QUOTA PERIOD" or
 * "max PERIOD"; v1's cpu.cfs_quota_us reads the quota (-1: none) and cpu.cfs_period_us the
 * period. */
static double quota_cores(const char *dir, const char *name, const char *period)
{
    char path[PATH_MAX];
    double q = 0, per = 0;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int got = period ? fscanf(f, "%lf", &q) : fscanf(f, "%lf %lf", &q, &per);
    fclose(f);
    if (got < 1 || !(q > 0))
        return 0; /* "max", -1 or unreadable: no limit here */
    if (period) {
        if (snprintf(path, sizeof path, "%s/%s", dir, period) >= (int)sizeof path ||
            !(f = fopen(path, "r")))
            return 0;
        got = fscanf(f, "%lf", &per);
        fclose(f);
        if (got != 1)
            return 0;
    } else if (got != 2) {
        return 0;
    }
    return per > 0 ? q / per : 0;
}

/* The tightest quota from cgroup directory root/path up to root itself (a limit set on a
 * parent binds its children too), in cores; 0: none. */
static double tightest_quota(const char *root, const char *path, const char *name,
                             const char *period)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s%s", root, path) >= (int)sizeof dir)
        return 0;
    size_t rootlen = strlen(root);
    double least = 0;
    for (;;) {
        double q = quota_cores(dir, name, period);
        if (q > 0 && (least == 0 || q < least))
            least = q;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < rootlen)
            return least;
        *slash = '\0';
    }
}

int rs_cores_usable(const char *cgroup_root, const char *proc_cgroup)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = online > 0 ? (int)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < cores)
        cores = CPU_COUNT(&set);
    FILE *f = proc_cgroup ? fopen(proc_cgroup, "r") : NULL;
    if (!f)
        return cores;
    char line[PATH_MAX + 64];
    double quota = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* "ID:CONTROLLERS:PATH": v2 is "0::PATH"; v1 lists the cpu controller by name */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1, *path = c2 + 1;
        double q = 0;
        char root[PATH_MAX];
        if (!*controllers) {
            q = tightest_quota(cgroup_root, strcmp(path, "/") ? path : "", "cpu.max", NULL);
        } else {
            char list[256];
            snprintf(list, sizeof list, ",%s,", controllers);
            if (!strstr(list, ",cpu,"))
                continue;
            /* v1 mounts the hierarchy under its controllers' names ("cpu,cpuacct") */
            if (snprintf(root, sizeof root, "%s/%s", cgroup_root, controllers) >=
                (int)sizeof root)
                continue;
            q = tightest_quota(root, strcmp(path, "/") ? path : "", "cpu.cfs_quota_us",
                               "cpu.cfs_period_us");
        }
        if (q > 0 && (quota == 0 || q < quota))
            quota = q;
    }
    fclose(f);
    if (quota > 0 && ceil(quota) < cores)
        cores = (int)ceil(quota);
    return cores > 0 ? cores : 1;
}

/* Whether the machine has no core to spare: the running mean (1/4 weight) of the tasks running
 * or runnable (/proc/loadavg's fourth field, this thread among them), sampled at most every
 * 10 ms, above the cores this process may use (rs_cores_usable) plus one, as a polling loop
 * and the client it waits for may both be running on a machine with room. A loop that polls
 * then would take a core from the client or the I/O thread that brings its next request (two
 * shards polling on two cores halved a bench's Steps per second). loadavg counts the whole
 * host's tasks, so under a container's quota this errs towards sleeping. Without
 * /proc/loadavg: never. */
static int contended(rs_spin_t *sp, double now)
{
    if (!sp->load_cores) /* once per loop: it reads files */
        sp->load_cores = rs_cores_usable("/sys/fs/cgroup", "/proc/self/cgroup");
    if (now - sp->load_at >= 0.01) {
        sp->load_at = now;
        FILE *f = fopen("/proc/loadavg", "r");
        int running = 0;
        if (f && fscanf(f, "%*f %*f %*f %d/", &running) == 1)
            sp->running_avg += (running - sp->running_avg) / 4;
        if (f)
            fclose(f);
    }
    return sp->running_avg > (double)sp->load_cores + 1;
}

void rs_spin(rs_server_t *s, void *sock)
{
    double max = s->cfg.spin_seconds;
    if (!(max > 0))
        return; /* --spin-us 0: not even the clock */
    rs_spin_t *sp = s->spin;
    double t0 = rs_clock();
    sp->wait_from = t0;
    if (sp->gap_avg >= max || contended(sp, t0))
        return;
    for (;;) {
        int events = 0;
        size_t len = sizeof events;
        if (zmq_getsockopt(sock, ZMQ_EVENTS, &events, &len) != 0 || (events & ZMQ_POLLIN) ||
            rs_clock() - t0 >= max || rs_server_stopping(s))
            return;
        sched_yield(); /* a thread that would bring the request may be waiting for this core */
    }
}

void rs_spin_arrived(rs_server_t *s)
{
    double max = s->cfg.spin_seconds;
    if (!(max > 0))
        return;
    rs_spin_t *sp = s->spin;
    double gap = fmin(rs_clock() - sp->wait_from, 4 * max); /* so a long idle spell is soon
                                                                forgotten once requests come */
    sp->gap_avg += (gap - sp->gap_avg) / 8;
}
