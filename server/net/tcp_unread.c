/* Whether a TCP connection of this process holds bytes not read yet (the drain's question,
 * loop.c). */
#include "server_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int cmp_ulong(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return (x > y) - (x < y);
}

/* Whether a TCP connection of this process holds bytes that ZeroMQ's I/O threads have not read
 * yet: a request a client sent before the stop, which a busy machine has not yet let an I/O
 * thread take in. The process's sockets by inode (the links in /proc/self/fd), then the
 * receive queues of /proc/net/tcp and tcp6: paths only, no call on another thread's fd. Only
 * ever asked while stopping. Linux; elsewhere 0, and the drain's quiet time alone covers it. */
int rs_tcp_input_unread(void)
{
#ifdef __linux__
    unsigned long *ino = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[64], link[64];
        unsigned long i;
        snprintf(path, sizeof path, "/proc/self/fd/%.32s", e->d_name);
        ssize_t len = readlink(path, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = 0;
        if (sscanf(link, "socket:[%lu]", &i) != 1)
            continue;
        if (n == cap) {
            unsigned long *grown = realloc(ino, (cap ? 2 * cap : 64) * sizeof *ino);
            if (!grown)
                break;
            ino = grown;
            cap = cap ? 2 * cap : 64;
        }
        ino[n++] = i;
    }
    closedir(d);
    qsort(ino, n, sizeof *ino, cmp_ulong);
    int found = 0;
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int k = 0; k < 2 && n && !found; k++) {
        FILE *f = fopen(tables[k], "r");
        char line[512];
        if (!f)
            continue;
        if (fgets(line, sizeof line, f)) /* the header */
            while (!found && fgets(line, sizeof line, f)) {
                unsigned state = 0;
                unsigned long tx = 0, rx = 0, i = 0;
                /* sl local remote st tx_queue:rx_queue tr:when retrnsmt uid timeout inode */
                found = sscanf(line, " %*d: %*s %*s %x %lx:%lx %*s %*s %*u %*d %lu", &state, &tx,
                               &rx, &i) == 4 &&
                        state == 1 /* ESTABLISHED */ && rx > 0 &&
                        bsearch(&i, ino, n, sizeof *ino, cmp_ulong);
            }
        fclose(f);
    }
    free(ino);
    return found;
#else
    return 0;
#endif
}