/* Sequences of operations on one server's worlds, each operation chosen by two bytes (which
 * operation, and its argument), for the world-lifetime test and the fuzz_sequence harness.
 * Every structure the server keeps beside a world or a model (the rollback copy, the history,
 * a snapshot) must survive every order of create, step, set-params, load spec, fork, set-state,
 * reset and destroy; a sanitizer build turns a dangling pointer into a crash. */
#ifndef RS_OP_SEQUENCE_H
#define RS_OP_SEQUENCE_H

#include "fuzz_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SEQ_CREATE,      /* arg: preset (finger with control_dt 0.0123, or mobile_manipulator) */
    SEQ_STEP,        /* arg: world, and 1-3 control steps */
    SEQ_SET_PARAMS,  /* arg: world, and a control_dt */
    SEQ_LOAD_SPEC,   /* arg: world, and a valid document or one of large junk strings */
    SEQ_FORK,        /* arg: world */
    SEQ_SNAPSHOT,    /* arg: world: GetState{snapshot}, kept for SEQ_SET_STATE */
    SEQ_SET_STATE,   /* arg: world: the kept snapshot (maybe another world's or model's) */
    SEQ_RESET,       /* arg: world */
    SEQ_DESTROY,     /* arg: world */
    SEQ_WRENCH,      /* arg: world: an external force on the finger for one control step */
    SEQ_NOPS
};

typedef struct seq_ctx {
    rs_server_t *s;
    char *spec;     /* a specification the mobile manipulator accepts (NULL: none found) */
    size_t spec_len;
    char *junk;     /* a large document of long strings, refused */
    size_t junk_len;
    uint8_t *snap;  /* the last GetState{snapshot} (malloc'd) */
    size_t snap_len;
    int internal;   /* replies with INTERNAL or that did not decode */
} seq_ctx_t;

/* Read the example specification beside this file's source tree (NULL when absent). */
static inline char *seq_read_spec(size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *at = strstr(path, "tests/fuzz/");
    if (!at)
        return NULL;
    snprintf(at, sizeof path - (size_t)(at - path), "examples/specs/single_arm.jsonld");
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 16);
    *len = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[*len] = '\0';
    return buf;
}

/* A server for sequences: no default world, room for large specifications. */
static inline rs_server_t *seq_server_new(void)
{
    return fuzz_server_with(NULL, 1u << 21);
}

/* A sequence's server and documents. 0, or -1 when out of memory. */
static inline int seq_init(seq_ctx_t *c)
{
    memset(c, 0, sizeof *c);
    if (!(c->s = seq_server_new()))
        return -1;
    c->spec = seq_read_spec(&c->spec_len);
    c->junk_len = 256 * 1024;
    if (!(c->junk = malloc(c->junk_len + 1)))
        return -1;
    /* {"@graph": [{"@id": "aaaa...", ...}, ...]}: parses as JSON, refused as a specification */
    size_t n = (size_t)snprintf(c->junk, c->junk_len, "{\"@graph\": [");
    while (n + 5000 < c->junk_len) {
        n += (size_t)snprintf(c->junk + n, c->junk_len - n, "{\"@id\": \"");
        memset(c->junk + n, 'a' + (int)(n % 26), 4000);
        n += 4000;
        n += (size_t)snprintf(c->junk + n, c->junk_len - n, "\", \"@type\": \"Frame\"},");
    }
    c->junk[n - 1] = ']';
    n += (size_t)snprintf(c->junk + n, c->junk_len - n, "}");
    c->junk_len = n;
    return 0;
}

static inline void seq_fini(seq_ctx_t *c)
{
    rs_server_destroy(&c->s); /* the shutdown path frees every world and what it holds */
    free(c->spec);
    free(c->junk);
    free(c->snap);
    memset(c, 0, sizeof *c);
}

/* The id of the world `arg` picks among those that exist (0 when none: a NOT_FOUND request). */
static inline uint64_t seq_world(const seq_ctx_t *c, uint8_t arg)
{
    return c->s->nworlds ? c->s->worlds[arg % c->s->nworlds].id : 0;
}

/* Handle rq on world `world`; a reply that does not decode or says INTERNAL is counted. */
static inline Robosim__V1__Response *seq_send(seq_ctx_t *c, Robosim__V1__Request *rq,
                                              uint64_t world)
{
    rq->world_id = world;
    rq->token = FUZZ_TOKEN;
    size_t n = robosim__v1__request__get_packed_size(rq);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return NULL;
    robosim__v1__request__pack(rq, b);
    const uint8_t *out;
    size_t outlen;
    rs_server_handle(c->s, b, n, &out, &outlen);
    free(b);
    Robosim__V1__Response *rp = robosim__v1__response__unpack(NULL, outlen, out);
    if (!rp || (rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR &&
                rp->error->code == ROBOSIM__V1__ERROR_CODE__INTERNAL)) {
        if (rp)
            fprintf(stderr, "INTERNAL: %s\n", rp->error->message);
        c->internal++;
    }
    fuzz_fix_tokens(c->s);
    return rp;
}

/* Send msg as the request operation op_case (its oneof member, set through the descriptor). */
static inline Robosim__V1__Response *seq_send_op(seq_ctx_t *c, Robosim__V1__Request__OpCase op_case,
                                                 const ProtobufCMessage *msg, uint64_t world)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&robosim__v1__request__descriptor, op_case);
    rq.op_case = op_case;
    memcpy((char *)&rq + f->offset, &msg, sizeof msg);
    return seq_send(c, &rq, world);
}

/* Apply one operation. */
static inline void seq_apply(seq_ctx_t *c, uint8_t op, uint8_t arg)
{
    uint64_t world = seq_world(c, arg);
    double dts[] = {0.0123, 0.02, 0.01, 0.005};
    Robosim__V1__Param param = ROBOSIM__V1__PARAM__INIT, *pp = &param;
    param.name = "control_dt";
    param.n_values = 1;
    param.values = &dts[(arg >> 4) % 4];
    Robosim__V1__Response *rp = NULL;
    switch (op % SEQ_NOPS) {
    case SEQ_CREATE: {
        Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
        cw.preset = arg % 4 == 3 ? "mobile_manipulator" : "finger";
        if (arg % 4 != 3) {
            cw.n_params = 1;
            cw.params = &pp;
        }
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_CREATE_WORLD, &cw.base, 0);
        break;
    }
    case SEQ_STEP: {
        Robosim__V1__Step sp = ROBOSIM__V1__STEP__INIT;
        sp.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
        sp.steps = 1 + (arg >> 4) % 3;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_STEP, &sp.base, world);
        break;
    }
    case SEQ_SET_PARAMS: {
        Robosim__V1__SetParams sp = ROBOSIM__V1__SET_PARAMS__INIT;
        sp.n_params = 1;
        sp.params = &pp;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_SET_PARAMS, &sp.base, world);
        break;
    }
    case SEQ_LOAD_SPEC: {
        Robosim__V1__LoadMotionSpec lm = ROBOSIM__V1__LOAD_MOTION_SPEC__INIT;
        lm.document = (arg & 16) && c->spec ? c->spec : c->junk;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_LOAD_MOTION_SPEC, &lm.base, world);
        break;
    }
    case SEQ_FORK: {
        Robosim__V1__ForkWorld fw = ROBOSIM__V1__FORK_WORLD__INIT;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_FORK_WORLD, &fw.base, world);
        break;
    }
    case SEQ_SNAPSHOT: {
        Robosim__V1__GetState gs = ROBOSIM__V1__GET_STATE__INIT;
        gs.snapshot = 1;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_GET_STATE, &gs.base, world);
        if (rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_GET_STATE &&
            rp->get_state->snapshot.len) {
            uint8_t *keep = malloc(rp->get_state->snapshot.len);
            if (keep) {
                memcpy(keep, rp->get_state->snapshot.data, rp->get_state->snapshot.len);
                free(c->snap);
                c->snap = keep;
                c->snap_len = rp->get_state->snapshot.len;
            }
        }
        break;
    }
    case SEQ_SET_STATE: {
        Robosim__V1__SetState ss = ROBOSIM__V1__SET_STATE__INIT;
        ss.snapshot.data = c->snap;
        ss.snapshot.len = c->snap_len;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_SET_STATE, &ss.base, world);
        break;
    }
    case SEQ_RESET: {
        Robosim__V1__Reset r = ROBOSIM__V1__RESET__INIT;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_RESET, &r.base, world);
        break;
    }
    case SEQ_DESTROY: {
        Robosim__V1__DestroyWorld d = ROBOSIM__V1__DESTROY_WORLD__INIT;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_DESTROY_WORLD, &d.base, world);
        break;
    }
    case SEQ_WRENCH: {
        Robosim__V1__ApplyWrench aw = ROBOSIM__V1__APPLY_WRENCH__INIT;
        double v = 50.0;
        aw.entity = "finger";
        aw.body = "finger";
        aw.n_values = 1;
        aw.values = &v;
        rp = seq_send_op(c, ROBOSIM__V1__REQUEST__OP_APPLY_WRENCH, &aw.base, world);
        break;
    }
    }
    if (rp)
        robosim__v1__response__free_unpacked(rp, NULL);
}

#endif
