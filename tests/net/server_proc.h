/* Start the real robosim-server on a free loopback port for a test, and stop it. */
#ifndef RS_SERVER_PROC_H
#define RS_SERVER_PROC_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "robosim_client.h"

typedef struct server_proc {
    pid_t pid;
    char endpoint[64];
    int stdin_w; /* the write end of the server's stdin (it runs with --exit-with-stdin): when
                    the test dies, however it dies, the pipe closes and the server stops; 0
                    when none */
} server_proc_t;

/* The robosim-server binary a test is given as its argument (argv[1]); without one, a usage line
 * on stderr and exit status 2. */
static inline const char *server_arg(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH/TO/robosim-server\n", argv[0]);
        exit(2);
    }
    return argv[1];
}

/* A loopback TCP port nobody listens on right now. */
static int free_port(void)
{
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_REP);
    char ep[64];
    size_t len = sizeof ep;
    int port = -1;
    if (zmq_bind(s, "tcp://127.0.0.1:*") == 0 && zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len) == 0)
        port = atoi(strrchr(ep, ':') + 1);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return port;
}

/* Close the pipe that keeps the server of sp running (server_proc_t.stdin_w). */
static inline void server_close_stdin(server_proc_t *sp)
{
    if (sp->stdin_w > 2)
        close(sp->stdin_w);
    sp->stdin_w = 0;
}

/* Start `binary` with extra arguments (NULL-terminated) and wait until it answers Hello (a
 * client connecting with `o`, e.g. CURVE keys; NULL: plaintext). The observer stream binds a
 * free loopback port unless `extra` says --stream or --no-stream. Returns 0, -1 if it did not
 * answer within 10 s, -2 if it exited first. */
static int server_start_once(server_proc_t *sp, const char *binary, const char *const *extra,
                             const rsc_options_t *o)
{
    snprintf(sp->endpoint, sizeof sp->endpoint, "tcp://127.0.0.1:%d", free_port());
    const char *argv[32] = {binary, "--bind", sp->endpoint, "--log-level", "warn"};
    int argc = 5, stream_given = 0;
    for (int i = 0; extra && extra[i] && argc < 28; i++) {
        stream_given |= !strcmp(extra[i], "--stream") || !strcmp(extra[i], "--no-stream");
        argv[argc++] = extra[i];
    }
    /* ROBOSIM_TEST_SHARDS=N: the same test against a server of N shards (unless the test
     * names its own --shards); unset, one loop (--shards 1), so that the tests see the same
     * server on any machine, whatever the default (auto: one shard per CPU) makes of it;
     * "default": no --shards at all, the server's own default (what a benchmark of the
     * untuned server must get) */
    const char *shards = getenv("ROBOSIM_TEST_SHARDS");
    if (!shards || !shards[0])
        shards = "1";
    int shards_given = !strcmp(shards, "default");
    for (int i = 1; i < argc; i++)
        shards_given |= !strcmp(argv[i], "--shards");
    if (!shards_given && argc < 28) {
        argv[argc++] = "--shards";
        argv[argc++] = shards;
    }
    if (!stream_given) { /* each test server its own stream port (Hello says which) */
        argv[argc++] = "--stream";
        argv[argc++] = "tcp://127.0.0.1:*";
    }
    int in[2] = {-1, -1};
    if (pipe(in) == 0) {
        fcntl(in[0], F_SETFD, FD_CLOEXEC);
        fcntl(in[1], F_SETFD, FD_CLOEXEC);
        argv[argc++] = "--exit-with-stdin";
    }
    argv[argc] = NULL;
    sp->stdin_w = 0;
    sp->pid = fork();
    if (sp->pid == 0) {
        if (in[0] >= 0)
            dup2(in[0], 0); /* dup2 clears FD_CLOEXEC on the copy */
        execv(binary, (char *const *)argv);
        perror("execv");
        _exit(127);
    }
    if (in[0] >= 0) {
        close(in[0]);
        sp->stdin_w = in[1];
    }
    for (int i = 0; i < 100; i++) {
        rsc_error_t err;
        rsc_options_t wait = o ? *o : (rsc_options_t){0};
        wait.timeout_ms = 100;
        rsc_client_t *c = rsc_connect_with(sp->endpoint, &wait, &err);
        if (c) {
            rsc_close(&c);
            return 0;
        }
        int status;
        if (waitpid(sp->pid, &status, WNOHANG) == sp->pid) {
            sp->pid = -1;
            server_close_stdin(sp);
            return -2;
        }
    }
    return -1;
}

/* server_start_once, again on another free port where the server exited at once: the port
 * free_port found may be taken before the server binds it ("cannot bind ...: Address already in
 * use", once in a ThreadSanitizer run of test_stalls); a server that refuses to start for
 * another reason refuses each time. */
static int server_start_with(server_proc_t *sp, const char *binary, const char *const *extra,
                             const rsc_options_t *o)
{
    int rc = -1;
    for (int attempt = 0; attempt < 4; attempt++)
        if ((rc = server_start_once(sp, binary, extra, o)) != -2)
            return rc;
    return -1;
}

/* server_start_with a plaintext client. */
static inline int server_start(server_proc_t *sp, const char *binary, const char *const *extra)
{
    return server_start_with(sp, binary, extra, NULL);
}

/* server_start, or a test that cannot start its server stops here (exit status 1, the reason on
 * stderr). */
static inline void server_start_or_exit(server_proc_t *sp, const char *binary,
                                        const char *const *extra)
{
    if (server_start(sp, binary, extra) != 0) {
        fprintf(stderr, "%s did not start\n", binary);
        exit(1);
    }
}

/* A client of `endpoint` (timeout_ms per reply); a test that cannot connect stops here (exit
 * status 1, the reason on stderr). */
static inline rsc_client_t *client_of(const char *endpoint, int timeout_ms)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, timeout_ms, &err);
    if (!c) {
        fprintf(stderr, "cannot connect to %s: %s\n", endpoint, err.message);
        exit(1);
    }
    return c;
}

/* Sleep s seconds. */
static inline void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* SIGTERM the server and wait; returns its exit status (or -1 if it had to be killed). */
static int server_stop(server_proc_t *sp)
{
    if (sp->pid <= 0)
        return -1;
    kill(sp->pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        int status;
        if (waitpid(sp->pid, &status, WNOHANG) == sp->pid) {
            sp->pid = -1;
            server_close_stdin(sp);
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(sp->pid, SIGKILL);
    waitpid(sp->pid, NULL, 0);
    sp->pid = -1;
    server_close_stdin(sp);
    return -1;
}

/* Remove the flat folder dir (a test's state dir): its files, then itself. */
static inline void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (de->d_name[0] != '.')
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Run argv (NULL-terminated), its stdout (and with `with_stderr` its stderr; else stderr is
 * dropped) into out[n]; returns its exit status (-1 if it did not exit normally within 10 s). */
static inline int run_capture(const char *const *argv, char *out, size_t n, int with_stderr)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        if (with_stderr) {
            dup2(fd[1], 2);
        } else {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 2);
        }
        close(fd[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    /* read while it runs: a process that does not exit (a server that started) must not
     * block the test */
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    size_t used = 0;
    ssize_t r;
    int status, exited = 0;
    for (int i = 0; i < 1000 && !exited; i++) {
        while (used + 1 < n && (r = read(fd[0], out + used, n - 1 - used)) > 0)
            used += (size_t)r;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = 1;
            break;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    while (used + 1 < n && (r = read(fd[0], out + used, n - 1 - used)) > 0)
        used += (size_t)r;
    out[used] = '\0';
    close(fd[0]);
    if (exited)
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* The resident set of process pid in kB (VmRSS), or -1. */
static inline long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

#endif
