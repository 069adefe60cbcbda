/* CurveZMQ for the client: key files (ZeroMQ certificates) and the socket options that make a
 * socket a CURVE client. The encryption and the handshake are libzmq's. */
#include "robosim_client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <zmq.h>

static int key_err(rsc_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int key_err(rsc_error_t *err, const char *fmt, ...)
{
    if (err) {
        err->code = RSC_EARG;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return RSC_EARG;
}

/* Whether `z` is a key: exactly 40 characters that decode as Z85. */
static int is_key(const char *z)
{
    uint8_t raw[32];
    return z && strlen(z) == RSC_KEY_LEN && zmq_z85_decode(raw, z) != NULL;
}

/* The value of a certificate line "name = "value"" whose trimmed text starts with `name` (as
 * zmq.auth.load_certificate reads it: after the '=', spaces, tabs and quotes are trimmed off
 * both ends), copied into out[RSC_KEY_LEN + 1]; 1 if the line is that name's, else 0. */
static int cert_value(const char *line, const char *name, char *out, int *bad)
{
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0)
        return 0;
    const char *eq = strchr(line + n, '=');
    if (!eq) {
        *bad = 1;
        return 1;
    }
    const char *a = eq + 1, *b = a + strlen(a);
    while (*a && strchr(" \t\"'", *a))
        a++;
    while (b > a && strchr(" \t\"'\r\n", b[-1]))
        b--;
    if ((size_t)(b - a) != RSC_KEY_LEN) {
        *bad = 1;
        return 1;
    }
    memcpy(out, a, RSC_KEY_LEN);
    out[RSC_KEY_LEN] = '\0';
    *bad = !is_key(out);
    return 1;
}

int rsc_load_certificate(const char *path, char public_key[RSC_KEY_LEN + 1],
                         char secret_key[RSC_KEY_LEN + 1], rsc_error_t *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
    if (!path || !*path || !public_key)
        return key_err(err, "no key file given");
    FILE *f = fopen(path, "r");
    if (!f)
        return key_err(err, "cannot read key file %s: %s (make one with robosim-cli keygen)", path,
                       strerror(errno));
    char line[512], pub[RSC_KEY_LEN + 1] = "", sec[RSC_KEY_LEN + 1] = "";
    int lineno = 0, bad = 0, bad_line = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        lineno++;
        const char *t = line + strspn(line, " \t");
        if (*t == '#')
            continue;
        if (cert_value(t, "public-key", pub, &bad) || cert_value(t, "secret-key", sec, &bad))
            bad_line = lineno;
    }
    fclose(f);
    if (bad) {
        memset(sec, 0, sizeof sec);
        return key_err(err, "%s line %d: a key is written public-key = \"<40 Z85 characters>\"",
                       path, bad_line);
    }
    if (!pub[0])
        return key_err(err, "%s holds no public-key line: not a key file from robosim-cli keygen",
                       path);
    if (secret_key) {
        char derived[RSC_KEY_LEN + 1];
        if (!sec[0])
            return key_err(err, "%s holds no secret-key: give the secret key file (PREFIX.key_secret "
                                "from robosim-cli keygen), not the public one",
                           path);
        if (zmq_curve_public(derived, sec) != 0 || strcmp(derived, pub) != 0) {
            memset(sec, 0, sizeof sec);
            return key_err(err, "%s: its secret-key does not belong to its public-key", path);
        }
        memcpy(secret_key, sec, sizeof sec);
        memset(sec, 0, sizeof sec);
    }
    memcpy(public_key, pub, sizeof pub);
    return 0;
}

int rsc_options_set_curve(rsc_options_t *o, const char *server_key, const char *client_key_file,
                          rsc_error_t *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
    if (!o)
        return key_err(err, "no options given");
    memset(o->server_key, 0, sizeof o->server_key);
    memset(o->public_key, 0, sizeof o->public_key);
    memset(o->secret_key, 0, sizeof o->secret_key);
    int have_server = server_key && *server_key, have_client = client_key_file && *client_key_file;
    if (!have_server && !have_client)
        return 0;
    if (!have_server)
        return key_err(err, "a client key file (%s) needs the server's public key too (--server-key "
                            "or ROBOSIM_SERVER_KEY: the key, or the server's .key file)",
                       client_key_file);
    if (!have_client)
        return key_err(err, "the server's public key needs this client's key pair too "
                            "(--client-key-file or ROBOSIM_CLIENT_KEY_FILE: a PREFIX.key_secret "
                            "from robosim-cli keygen, listed in the server's --authorized-keys)");
    /* the key itself, unless a file of that name exists */
    struct stat sb;
    if (is_key(server_key) && stat(server_key, &sb) != 0) {
        memcpy(o->server_key, server_key, RSC_KEY_LEN + 1);
    } else {
        int rc = rsc_load_certificate(server_key, o->server_key, NULL, err);
        if (rc != 0) {
            if (err && strlen(server_key) != RSC_KEY_LEN)
                snprintf(err->message + strlen(err->message),
                         sizeof err->message - strlen(err->message),
                         " (the server key is 40 Z85 characters or a file holding it)");
            return rc;
        }
    }
    int rc = rsc_load_certificate(client_key_file, o->public_key, o->secret_key, err);
    if (rc != 0)
        memset(o->server_key, 0, sizeof o->server_key);
    return rc;
}

int rsc_apply_curve(void *zmq_socket, const rsc_options_t *o, rsc_error_t *err)
{
    if (!o || !o->server_key[0])
        return 0;
    if (!zmq_has("curve"))
        return key_err(err, "this libzmq was built without CURVE: install one built with "
                            "libsodium to talk to a server that runs CURVE");
    if (!is_key(o->server_key) || !is_key(o->public_key) || !is_key(o->secret_key))
        return key_err(err, "CURVE options need the server's public key and this client's public "
                            "and secret keys, each 40 Z85 characters");
    /* Z85 keys go in with their NUL: 41 bytes */
    if (zmq_setsockopt(zmq_socket, ZMQ_CURVE_SERVERKEY, o->server_key, RSC_KEY_LEN + 1) != 0 ||
        zmq_setsockopt(zmq_socket, ZMQ_CURVE_PUBLICKEY, o->public_key, RSC_KEY_LEN + 1) != 0 ||
        zmq_setsockopt(zmq_socket, ZMQ_CURVE_SECRETKEY, o->secret_key, RSC_KEY_LEN + 1) != 0)
        return key_err(err, "cannot set the CURVE keys on the socket: %s",
                       zmq_strerror(zmq_errno()));
    return 0;
}
