/* Shared by the core snapshot tests: a world's snapshot bytes, resealing bytes edited by hand,
 * and the check that a bad snapshot is refused without changing the world. */
#ifndef RS_TEST_SNAPSHOT_BYTES_H
#define RS_TEST_SNAPSHOT_BYTES_H

#include "rs_core.h"
#include "rs_snapshot.h"
#include "rs_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* w's snapshot (malloc'd, the caller frees it), its length in *len. */
static inline uint8_t *snapshot(const rs_world_t *w, size_t *len)
{
    rs_status_t st;
    size_t n = 0;
    rs_snapshot_size(w, &n);
    uint8_t *b = malloc(n);
    int rc = rs_snapshot_write(w, b, n, len, &st);
    CHECK(rc == 0 && *len == n, "snapshot written: %s (%zu of %zu bytes)", st.message, *len, n);
    return b;
}

/* Whether bytes a[na] and b[nb] are the same. */
static inline int same_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    return na == nb && memcmp(a, b, na) == 0;
}

/* Write the checksum of snapshot b[n] (edited by hand) into its last 8 bytes. */
static inline void reseal(uint8_t *b, size_t n)
{
    uint64_t h = rs_snapshot_checksum(b, n - 8);
    for (int i = 0; i < 8; i++)
        b[n - 8 + i] = (uint8_t)(h >> (8 * i));
}

/* Snapshot b[n] is refused with `code` and a message containing `word`; w's snapshot is
 * unchanged. `what` names the case in a failure. */
static inline void expect_refused(rs_world_t *w, const uint8_t *b, size_t n, int code,
                                  const char *word, const char *what)
{
    size_t l0, l1;
    uint8_t *before = snapshot(w, &l0);
    rs_status_t st;
    rs_status_clear(&st);
    int rc = rs_snapshot_read(w, b, n, &st);
    CHECK(rc == code && strstr(st.message, word), "%s: got %d '%s', want %d with '%s'", what, rc,
          st.message, code, word);
    uint8_t *after = snapshot(w, &l1);
    CHECK(same_bytes(before, l0, after, l1), "%s: the world is unchanged", what);
    free(before);
    free(after);
}

#endif
