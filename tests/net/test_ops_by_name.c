/* Every operation of the protocol is callable by name through rsc_call_op, the C client's
 * generic entry point read from the protobuf descriptors (the one robosim-cli call uses): each
 * answers with its own reply type or a server error, never a client-side or protocol error;
 * names are read in all three forms; a wrong name or message type is refused before anything is
 * sent, with the operations listed. */
#include "rs_test.h"
#include "server_proc.h"

#include <string.h>

static server_proc_t server;

/* The Response field that answers op: the same name. */
static const ProtobufCMessageDescriptor *reply_type(const ProtobufCFieldDescriptor *op)
{
    const ProtobufCFieldDescriptor *rf =
        protobuf_c_message_descriptor_get_field_by_name(&robosim__v1__response__descriptor,
                                                        op->name);
    return rf ? rf->descriptor : NULL;
}

static void names(void)
{
    size_t n = rsc_op_count();
    CHECK(n >= 20, "%zu operations", n);
    for (size_t i = 0; i < n; i++) {
        const ProtobufCFieldDescriptor *op = rsc_op_at(i);
        const ProtobufCMessageDescriptor *md = op->descriptor;
        char dashed[64];
        snprintf(dashed, sizeof dashed, "%s", op->name);
        for (char *p = dashed; *p; p++)
            if (*p == '_')
                *p = '-';
        CHECK(rsc_op_find(op->name) == op, "found by %s", op->name);
        CHECK(rsc_op_find(md->short_name) == op, "found by %s", md->short_name);
        CHECK(rsc_op_find(dashed) == op, "found by %s", dashed);
        CHECK(reply_type(op) != NULL, "%s has a reply in Response", op->name);
    }
    CHECK(rsc_op_at(n) == NULL, "nothing past the last operation");
    CHECK(rsc_op_find("get__state") == NULL && rsc_op_find("") == NULL &&
              rsc_op_find(NULL) == NULL && rsc_op_find("error") == NULL,
          "near misses, the Response's error and NULL name no operation");
}

static void every_op(void)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(server.endpoint, 10000, &err);
    CHECK(c != NULL, "connect: %s", err.message);
    if (!c)
        return;

    /* a world to act on, created by name (its token is kept as rsc_create_world keeps it) */
    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    cw.preset = (char *)"finger";
    ProtobufCMessage *reply = NULL;
    int rc = rsc_call_op(c, 0, "CreateWorld", &cw.base, &reply, &err);
    CHECK(rc == 0 && reply && reply->descriptor == &robosim__v1__create_world_reply__descriptor,
          "create_world by name: %d %s", rc, err.message);
    uint64_t world = rc == 0 ? ((Robosim__V1__CreateWorldReply *)reply)->world->world_id : 0;
    rsc_free(reply);
    CHECK(world && rsc_world_token(c, world) != NULL, "the new world's token is kept");

    /* each operation with its message at the defaults, on that world (destroy last) */
    const ProtobufCFieldDescriptor *op;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; (op = rsc_op_at(i)); i++) {
            int destroy = strcmp(op->name, "destroy_world") == 0;
            if (destroy != pass)
                continue;
            reply = NULL;
            rc = rsc_call_op(c, world, op->name, NULL, &reply, &err);
            CHECK(rc >= 0, "%s: a client-side failure %d (%s): %s", op->name, rc,
                  rsc_error_name(rc), err.message);
            if (rc == 0)
                CHECK(reply && reply->descriptor == reply_type(op), "%s answered with %s",
                      op->name, reply ? reply->descriptor->name : "nothing");
            else
                CHECK(reply == NULL && err.message[0], "%s refused by the server (%s): %s",
                      op->name, rsc_error_name(rc), err.message);
            rsc_free(reply);
        }
    CHECK(rsc_world_token(c, world) == NULL, "destroy_world forgot the world's token");

    /* refused before anything is sent: an unknown name, another operation's message */
    rc = rsc_call_op(c, world, "get_stat", NULL, &reply, &err);
    CHECK(rc == RSC_EARG && reply == NULL, "unknown operation: %d", rc);
    CHECK(strstr(err.message, "no operation 'get_stat'") && strstr(err.message, "get_state") &&
              strstr(err.message, "clear_motion_spec"),
          "the message lists the operations: %s", err.message);
    Robosim__V1__GetState gs = ROBOSIM__V1__GET_STATE__INIT;
    rc = rsc_call_op(c, world, "step", &gs.base, &reply, &err);
    CHECK(rc == RSC_EARG && strstr(err.message, "robosim.v1.Step") &&
              strstr(err.message, "robosim.v1.GetState"),
          "a GetState message for step: %d %s", rc, err.message);
    rsc_close(&c);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    names();
    CHECK(server_start(&server, binary, NULL) == 0, "server did not start on %s",
          server.endpoint);
    if (server.pid <= 0)
        return rs_test_done("test_ops_by_name");
    every_op();
    CHECK(server_stop(&server) == 0, "server exits 0 on SIGTERM");
    return rs_test_done("test_ops_by_name");
}
