/* The error table (rs_errors.h) and rs_join, the one place a message's list of names is built:
 * codes and names agree, a list joins with ", ", a full buffer cuts the list off and stays
 * terminated, and the core's callers name every choice. */
#include "rs_core.h"
#include "rs_test.h"

#include <string.h>

static void codes(void)
{
    CHECK(strcmp(rs_errname(RS_ENOTFOUND), "ENOTFOUND") == 0 &&
              strcmp(rs_strerror(RS_ENOTFOUND), "not found") == 0,
          "ENOTFOUND: %s, %s", rs_errname(RS_ENOTFOUND), rs_strerror(RS_ENOTFOUND));
    CHECK(strcmp(rs_strerror(-999), "unknown error") == 0, "unknown code");
}

static void join(void)
{
    char buf[32] = "";
    CHECK(rs_join(buf, sizeof buf, "'%s'", "a") == buf && strcmp(buf, "'a'") == 0,
          "one item: [%s]", buf);
    rs_join(buf, sizeof buf, "%d", 42);
    rs_join(buf, sizeof buf, "%s (%s)", "body", "fx");
    CHECK(strcmp(buf, "'a', 42, body (fx)") == 0, "three items: [%s]", buf);

    /* cut off at the buffer's end, terminated, and appending to a full list changes nothing */
    char small[8] = "";
    for (int i = 0; i < 10; i++)
        rs_join(small, sizeof small, "item%d", i);
    CHECK(strlen(small) == sizeof small - 1 && strncmp(small, "item0, ", 7) == 0,
          "cut off: [%s]", small);
    char edge[7] = "abcde"; /* one byte left: the separator is cut, nothing past it */
    rs_join(edge, sizeof edge, "x");
    CHECK(strcmp(edge, "abcde,") == 0, "one byte left: [%s]", edge);
    CHECK(rs_join(NULL, 4, "x") == NULL, "NULL buffer is accepted");
}

/* The messages built with it name the choices. */
static void callers(void)
{
    rs_status_t st;
    rs_model_t m;
    CHECK(rs_model_build(&m, "no_such_preset", NULL, 0, &st) == RS_ENOTFOUND &&
              strstr(st.message, "(presets: ") && strstr(st.message, "finger, ") &&
              strstr(st.message, "serial_arm"),
          "unknown preset: %s", st.message);
    double v = 1;
    rs_param_t p = {"finger", "no_such_param", &v, 1};
    CHECK(rs_model_build(&m, "finger", &p, 1, &st) == RS_ENOTFOUND &&
              strstr(st.message, "no_such_param") && strstr(st.message, ", "),
          "unknown parameter lists the parameters: %s", st.message);
}

int main(void)
{
    codes();
    join();
    callers();
    return rs_test_done("test_errors");
}
