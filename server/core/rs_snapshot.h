/* Snapshots: everything a world needs to go on exactly, as one opaque, versioned, checksummed
 * blob (GetState.snapshot, SetState, ForkWorld; the server adds its MAC, server/net/snapmac.c).
 *
 * A snapshot holds the preset and task names, every model parameter (so a world changed with
 * SetParams restores its parameters too) and every field of rs_data_t's field table (rs_data.h:
 * time, grid, h_next, seed and rng, state, commands, sensors, modes and the robots' private
 * variables, schedules, event log, episode state, integrator statistics). The integrator
 * restarts every interval from the data alone (step.c), so a world restored from a snapshot
 * steps on bit for bit as the original would have.
 *
 * Layout (format version 3, little-endian; 3 added the state digest): magic "RSIMSNAP", u32 version, u32 0, u64 total
 * length, preset, task, the parameters, then each field as its name, a u32 count and its
 * values, then a 64-bit FNV-1a checksum of everything before it. A restore validates every
 * value against the snapshot's model before it changes anything (rs_data_check). */
#ifndef RS_SNAPSHOT_H
#define RS_SNAPSHOT_H

#include "rs_core.h"

#define RS_SNAPSHOT_VERSION 3

/* The size in bytes of w's snapshot now, in *size. Returns 0. */
int rs_snapshot_size(const rs_world_t *w, size_t *size);

/* Write w's snapshot into buf (cap bytes); its length in *len. Returns 0, or RS_EEXHAUSTED
 * when cap is too small (rs_snapshot_size says how much is needed). */
int rs_snapshot_write(const rs_world_t *w, uint8_t *buf, size_t cap, size_t *len,
                      rs_status_t *st);

/* Restore w from a snapshot. Everything is validated before anything changes; on error w is
 * unchanged and the reason is in st:
 *   RS_EINVAL     not a snapshot, truncated, trailing bytes, checksum mismatch, or contents
 *                 that do not fit (a value out of its bounds, a count that is not the world's,
 *                 a mode or private variable its robot does not allow, time off its grid);
 *   RS_EPRECOND   another format version, or a snapshot of another preset or task;
 *   RS_EEXHAUSTED out of memory for the schedules.
 * The integrator is restarted at the restored state with the restored step size. */
int rs_snapshot_read(rs_world_t *w, const uint8_t *buf, size_t len, rs_status_t *st);

/* A new world with src's preset and task, restored from `snap` (len bytes) or, when snap is
 * NULL, from src's state now. NULL on failure (reason in st, as rs_snapshot_read). Free with
 * rs_world_destroy. */
rs_world_t *rs_world_fork(const rs_world_t *src, const uint8_t *snap, size_t len,
                          rs_status_t *st);

/* The checksum a snapshot ends with (64-bit FNV-1a, stored little-endian) over its first n
 * bytes: everything before the checksum. */
uint64_t rs_snapshot_checksum(const uint8_t *p, size_t n);

#endif
