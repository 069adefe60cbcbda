/* The bytes of replies a loop has handed ZeroMQ for each peer of its ROUTER and that the peer's
 * connection has not taken yet (sendq.c): a client that sends and never reads holds them in
 * the server, so past --max-queued-bytes-per-peer its requests are refused unrun. */
#ifndef RS_SENDQ_H
#define RS_SENDQ_H

#include <stddef.h>
#include <zmq.h>

typedef struct rs_sendq rs_sendq_t;

/* An empty account. NULL when out of memory. */
rs_sendq_t *rs_sendq_new(void);

/* Free the account (NULL-safe; clears *q). A peer's record that replies still in ZeroMQ point
 * at is freed by the last of them, so this may come before the socket's context ends. */
void rs_sendq_destroy(rs_sendq_t **q);

/* Send a reply on ROUTER `sock`: the envelope frames[0..n-2] (consumed; frames[0] names the
 * peer), then `len` bytes of `data`, copied into a message counted against the peer until
 * ZeroMQ frees it (sent into the connection, or dropped with it). 0, or -1 (zmq_errno) when
 * the payload could not be sent (then it counts no more). */
int rs_sendq_send(rs_sendq_t *q, void *sock, zmq_msg_t *frames, int n, const void *data,
                  size_t len);

/* The bytes queued for the peer whose routing id is `routing` (0 for one never sent to). */
size_t rs_sendq_queued(rs_sendq_t *q, zmq_msg_t *routing);

/* The loop's duty: forget peers with nothing queued, and when the replies queued lately have
 * gone (taken, or dropped with their connection), give the freed heap back to the system (as
 * rs_heap_give_back). `now` is rs_clock(). The milliseconds until it wants calling again. */
int rs_sendq_tick(rs_sendq_t *q, double now);

/* Bytes queued for every peer, as counted at the last tick. */
size_t rs_sendq_total(const rs_sendq_t *q);

/* Give the heap pages freed since the last call back to the system (glibc keeps them;
 * AddressSanitizer's allocator too, and its quarantine) once the bytes in use have fallen by
 * RS_HEAP_GIVE_BACK_BYTES from their peak since; at most once a second in the process. Cheap
 * to call: one look at the allocator's counts. */
#define RS_HEAP_GIVE_BACK_BYTES ((size_t)8 << 20)
void rs_heap_give_back(double now);

#endif
