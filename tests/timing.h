/* The clocks tests and benchmarks time with, and the ascending order they sort timings in. */
#ifndef RS_TIMING_H
#define RS_TIMING_H

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

/* Seconds on the monotonic clock (wall time). */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of CPU time this process has used (all its threads). */
static inline double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of CPU time the calling thread has used. */
static inline double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* How many times longer than on an idle machine CPU work takes in wall-clock time now: the
 * wall seconds a busy loop of cpu_s CPU seconds on this thread took, over cpu_s, at least 1
 * (about 1 on an idle machine, about 5 beside scripts/hog's four CPU hogs per core, more under
 * ASan's threads). Tests measure it beside what they time, in the same run, and scale their
 * wall-clock bounds by it (wall_bound); docs/testing.md, "On a busy machine". */
static inline double slowdown(double cpu_s)
{
    double w0 = now(), c0 = thread_cpu_now(), c = c0;
    volatile double sink = 0;
    while ((c = thread_cpu_now()) - c0 < cpu_s)
        for (int i = 0; i < 10000; i++)
            sink += i;
    double r = (now() - w0) / (c - c0);
    return r > 1 ? r : 1;
}

/* The slowdown measured now and before (the larger: the load comes and goes). */
static inline double slowdown_since(double before)
{
    double s = slowdown(0.02);
    return s > before ? s : before;
}

/* A wall-clock bound of `goal` seconds on an idle machine, stretched by the slowdown measured
 * beside the timing: what took goal seconds of mostly CPU work takes goal x slow now. */
static inline double wall_bound(double goal, double slow)
{
    return goal * (slow > 1 ? slow : 1);
}

/* CPU seconds of process pid's threads, summed from /proc/PID/task/TID/schedstat (nanoseconds):
 * all of them returned, the main thread's (the front, or a single server's loop) in
 * *main_thread and ZeroMQ's I/O threads' in *io when those are not NULL; NAN if unreadable. */
static inline double cpu_threads(pid_t pid, double *main_thread, double *io)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (main_thread)
        *main_thread = 0;
    if (io)
        *io = 0;
    if (!d)
        return NAN;
    double all = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512], comm[64] = "";
        unsigned long long ns = 0;
        snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        int ok = f && fscanf(f, "%llu", &ns) == 1;
        if (f)
            fclose(f);
        if (!ok)
            continue;
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        if (io && (f = fopen(path, "r"))) { /* the thread's name: only to find ZeroMQ's */
            if (!fgets(comm, sizeof comm, f))
                comm[0] = '\0';
            fclose(f);
        }
        double sec = 1e-9 * (double)ns;
        all += sec;
        if (main_thread && atoi(e->d_name) == (int)pid)
            *main_thread += sec;
        else if (io && !strncmp(comm, "ZMQbg/IO", 8))
            *io += sec;
    }
    closedir(d);
    return all;
}

/* CPU seconds process pid's threads have run (cpu_threads). */
static inline double cpu_seconds(pid_t pid)
{
    return cpu_threads(pid, NULL, NULL);
}

/* qsort's comparison of doubles, ascending. */
static inline int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
