/* A loop's wait for its next request, polled for a while before it sleeps (spin.c). */
#ifndef RS_SPIN_H
#define RS_SPIN_H

typedef struct rs_server rs_server_t;
typedef struct rs_spin rs_spin_t;

/* A loop's record of its waits (NULL: out of memory); rs_spin_destroy frees it (NULL-safe). */
rs_spin_t *rs_spin_new(void);
void rs_spin_destroy(rs_spin_t **p);

/* Before the loop's blocking receive on sock: while its requests have lately come back within
 * cfg.spin_seconds of its last reply and the machine has a core to spare, poll sock
 * (ZMQ_EVENTS, no message taken) without sleeping until one is there, at most that long. A
 * thread woken from sleep adds a wake-up to the round trip; a client that steps in a tight
 * loop is back sooner. rs_spin_arrived after the receive keeps the mean (s->spin). */
void rs_spin(rs_server_t *s, void *sock);
void rs_spin_arrived(rs_server_t *s);

/* The cores this process may use: those online, no more than its CPU affinity holds, and no
 * more than the tightest CPU quota (rounded up) of its cgroups and their parents, cgroup v2
 * (cpu.max) or v1 (cpu.cfs_quota_us over cpu.cfs_period_us). cgroup_root: where cgroup file
 * systems are mounted ("/sys/fs/cgroup"); proc_cgroup: the process's cgroup list
 * ("/proc/self/cgroup"; a file that cannot be read: no quota). At least 1. */
int rs_cores_usable(const char *cgroup_root, const char *proc_cgroup);

#endif
