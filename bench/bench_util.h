/* What the benchmarks share: the clocks they time with (tests/timing.h), the agent loops' random
 * commands, the server binary a network benchmark starts and the CPU time a process used. */
#ifndef RS_BENCH_UTIL_H
#define RS_BENCH_UTIL_H

#include "../tests/timing.h"

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* A uniform double in [0, 1) from one xorshift64 sequence per program (the same sequence on
 * every run, so runs compare). */
static inline double uniform01(void)
{
    static uint64_t rng = 88172645463325252ULL;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

/* The server binary to bench: `given` if not NULL, else robosim-server beside this program. */
static inline void find_server(char *path, size_t size, const char *given)
{
    if (given) {
        snprintf(path, size, "%s", given);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    snprintf(path, size, "%s/robosim-server", dirname(self));
}

/* CPU seconds (user + system) process pid has used, from /proc/PID/stat; NAN if unreadable. */
static inline double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command may hold spaces */
    unsigned long ut = 0, stt = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) != 2)
        return NAN;
    return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds every thread of process `pid` has run, summed from /proc/PID/task/TID/schedstat
 * (nanoseconds, not clock ticks: fine enough for a block of round trips); NAN if unreadable. */
static inline double cpu_schedstat(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return NAN;
    double ns = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long run = 0;
        if (f && fscanf(f, "%llu", &run) == 1)
            ns += (double)run;
        if (f)
            fclose(f);
    }
    closedir(d);
    return ns * 1e-9;
}

/* CPU seconds of process `pid`'s threads: the main thread (the front, or a single server's
 * loop) in *main, ZeroMQ's I/O threads in *io, all of them returned. */
static inline double cpu_threads(pid_t pid, double *main_thread, double *io)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    *main_thread = *io = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NAN;
    double all = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512], buf[1024];
        snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *open = strchr(buf, '('), *p = strrchr(buf, ')');
        unsigned long ut = 0, stt = 0;
        if (!open || !p ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) != 2)
            continue;
        double sec = (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
        all += sec;
        if (atoi(e->d_name) == (int)pid)
            *main_thread += sec;
        else if (!strncmp(open + 1, "ZMQbg/IO", 8))
            *io += sec;
    }
    closedir(d);
    return all;
}

#endif
