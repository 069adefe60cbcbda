/* The state dir's files (persist_file.c): their layout, little-endian fields at fixed offsets,
 * atomic writes and whole-file reads, for persist.c. */
#ifndef RS_PERSIST_FILE_H
#define RS_PERSIST_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "server_internal.h"

#define WORLD_MAGIC "RSIMWRLD"
#define SERVER_MAGIC "RSIMSRVR"
#define FILE_VERSION 2        /* world files written; version 1 is read too */
#define SERVER_FILE_VERSION 1 /* server.state */
#define SERVER_FILE "server.state"
#define LOCK_FILE "lock"
#define ID_BLOCK 1024 /* world ids reserved per server.state write */
#define NAME_LEN 32   /* preset and task name fields (RS_NAME_MAX) */
#define OWNER_LEN 80  /* the owner field: rs_caller_t.key */
#define WORLD_HEADER_V1 (8 + 4 + 4 + 8 + 2 * RS_TOKEN_LEN + 8 + 2 * NAME_LEN + 8)
#define WORLD_HEADER (WORLD_HEADER_V1 + OWNER_LEN)
#define OWNER_AT (32 + 2 * RS_TOKEN_LEN + 2 * NAME_LEN) /* offset of the owner field */
#define ID_MAX (UINT64_C(1) << 53) /* world ids stay below 2^53: exact in JSON readers too */
#define UNKNOWN_OWNER "restored"   /* a version 1 file's world: no client's key */
#define MAX_FILE_SIZE (256u << 20) /* a world file larger than this is not one of ours */
#define PATH_BUF (4096 + 320) /* the state dir (at most 4032 bytes) and a file name */

void rs_pfile_put_u32(uint8_t *p, uint32_t v);

void rs_pfile_put_u64(uint8_t *p, uint64_t v);

uint32_t rs_pfile_get_u32(const uint8_t *p);

uint64_t rs_pfile_get_u64(const uint8_t *p);

void rs_pfile_put_f64(uint8_t *p, double v);

double rs_pfile_get_f64(const uint8_t *p);

/* A fixed-width, zero-padded name field as a C string; 0, or -1 when it is not one (no NUL, or
 * bytes after the NUL that are not zero). */
int rs_pfile_get_name(const uint8_t *p, size_t width, char *out);

/* A token field: RS_TOKEN_LEN lowercase hex digits, or zero bytes for none. 0 or -1. */
int rs_pfile_get_token(const uint8_t *p, char out[RS_TOKEN_LEN + 1]);

/* Grow *ptr (elements of `size` bytes, *cap of them) to hold `need`. 0 or -1. */
int rs_pfile_reserve(void *ptr, int *cap, int need, size_t size);

/* Write `len` bytes to dir/name.tmp (created 0600), fsync'd when `sync` is set. 0 or
 * RS_EUNAVAIL (the temporary file removed). */
int rs_pfile_write_temp(const char *dir, const char *name, const uint8_t *p, size_t len, int sync,
                        rs_status_t *st);

/* Rename dir/name.tmp over dir/name. 0 or RS_EUNAVAIL (the temporary file removed). */
int rs_pfile_commit_temp(const char *dir, const char *name, rs_status_t *st);

/* Write `len` bytes as dir/name atomically: a temporary file fsync'd then renamed over the old
 * one. The directory itself is fsync'd by the caller. 0 or RS_EUNAVAIL. */
int rs_pfile_write_atomic(const char *dir, const char *name, const uint8_t *p, size_t len,
                          rs_status_t *st);

int rs_pfile_sync_dir(const char *dir, rs_status_t *st);

/* The whole of dir/name in a malloc'd buffer (*len bytes), or NULL with the reason in st. */
uint8_t *rs_pfile_read_all(const char *dir, const char *name, size_t *len, rs_status_t *st);

/* Move a file that could not be restored out of the way (name.bad), saying why. */
void rs_pfile_set_aside(const char *dir, const char *name, const char *why);

/* The id in a file name "world-<id>.rsw" (or any name starting "world-<id>." when `any_suffix`),
 * or 0 when it is not one: the id is decimal digits without a leading zero, from 1 to ID_MAX. */
uint64_t rs_pfile_world_file_id(const char *name, int any_suffix);

#endif
