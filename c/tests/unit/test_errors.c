/* SPDX-License-Identifier: BSD-3-Clause */
/* Error names, and the per-thread, per-client last error. */
#include <pthread.h>
#include <stdlib.h>

#include "client/client.h"
#include "client/error.h"
#include "check.h"

static void test_strerror_names(void)
{
    static const struct {
        int code;
        const char *name;
    } names[] = {
        {RLK_OK, "RLK_OK"},
        {RLK_ERR_IO, "RLK_ERR_IO"},
        {RLK_ERR_TIMEOUT, "RLK_ERR_TIMEOUT"},
        {RLK_ERR_URL, "RLK_ERR_URL"},
        {RLK_ERR_AUTH, "RLK_ERR_AUTH"},
        {RLK_ERR_PROTOCOL, "RLK_ERR_PROTOCOL"},
        {RLK_ERR_SCRIPT, "RLK_ERR_SCRIPT"},
        {RLK_ERR_NOSUCHSCRIPT, "RLK_ERR_NOSUCHSCRIPT"},
        {RLK_ERR_SHA, "RLK_ERR_SHA"},
        {RLK_ERR_BUNDLE, "RLK_ERR_BUNDLE"},
        {RLK_ERR_ARG, "RLK_ERR_ARG"},
        {RLK_ERR_NOMEM, "RLK_ERR_NOMEM"},
        {RLK_ERR_SERVER, "RLK_ERR_SERVER"},
        {RLK_ERR_NOT_OWNER, "RLK_ERR_NOT_OWNER"},
        {RLK_ERR_BUSY, "RLK_ERR_BUSY"},
        {RLK_ERR_LOST, "RLK_ERR_LOST"},
        {RLK_ERR_UPGRADE, "RLK_ERR_UPGRADE"},
        {RLK_ERR_INTERRUPTED, "RLK_ERR_INTERRUPTED"},
        {RLK_ERR_NOTIFY, "RLK_ERR_NOTIFY"},
        {RLK_ERR_UNSETTLED, "RLK_ERR_UNSETTLED"},
        {RLK_ERR_TLS, "RLK_ERR_TLS"},
        {RLK_ERR_CANCELLED, "RLK_ERR_CANCELLED"},
        {RLK_ERR_CLOSED, "RLK_ERR_CLOSED"},
        {RLK_ERR_FENCED, "RLK_ERR_FENCED"},
        {RLK_ERR_REENTRY, "RLK_ERR_REENTRY"},
    };

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK_STR_EQ(rlk_strerror(names[i].code), names[i].name);
}

static void test_strerror_unknown(void)
{
    CHECK_STR_EQ(rlk_strerror(-1), "RLK_ERR_UNKNOWN");
    CHECK_STR_EQ(rlk_strerror(1000), "RLK_ERR_UNKNOWN");
    CHECK_STR_EQ(rlk_strerror(1 << 30), "RLK_ERR_UNKNOWN");
}

/* A client whose URL is bad is a cheap client object for the error tests. */
static rlk_client *dummy_client(void)
{
    return rlk_connect_url("redis://h:0");
}

static void test_set_error_one_line(void)
{
    rlk_client *c = dummy_client();

    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_set_error(c, RLK_ERR_SCRIPT, "line one\nline two\r\t%d", 3), RLK_ERR_SCRIPT);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_SCRIPT);
    CHECK_STR_EQ(rlk_errstr(c), "line one line two  3");
    rlk_free(c);
}

static void test_set_error_truncates(void)
{
    rlk_client *c = dummy_client();
    char big[2000];

    REQUIRE(c != NULL);
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rlk_set_error(c, RLK_ERR_SERVER, "%s", big);
    CHECK_INT_EQ(strlen(rlk_errstr(c)), RLK_ERRSTR_MAX - 1);
    rlk_free(c);
}

typedef struct thread_arg {
    rlk_client *c;
    int code;
    int seen_before;
    int seen_code;
    char seen_msg[64];
    pthread_barrier_t *barrier;
} thread_arg;

static void *set_and_read(void *p)
{
    thread_arg *a = p;

    a->seen_before = rlk_err(a->c);
    rlk_set_error(a->c, a->code, "thread %d", a->code);
    pthread_barrier_wait(a->barrier);     /* both have written before either reads */
    a->seen_code = rlk_err(a->c);
    snprintf(a->seen_msg, sizeof a->seen_msg, "%s", rlk_errstr(a->c));
    return NULL;
}

/* Two threads failing on the same client each see their own error; the creating thread
 * still sees the connect error. */
static void test_errors_are_per_thread(void)
{
    rlk_client *c = dummy_client();
    pthread_barrier_t barrier;
    pthread_t t1, t2;
    thread_arg a1 = {c, RLK_ERR_IO, -1, -1, "", &barrier};
    thread_arg a2 = {c, RLK_ERR_SCRIPT, -1, -1, "", &barrier};

    REQUIRE(c != NULL);
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&t1, NULL, set_and_read, &a1);
    pthread_create(&t2, NULL, set_and_read, &a2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_barrier_destroy(&barrier);
    CHECK_INT_EQ(a1.seen_before, RLK_OK);
    CHECK_INT_EQ(a2.seen_before, RLK_OK);
    CHECK_INT_EQ(a1.seen_code, RLK_ERR_IO);
    CHECK_STR_EQ(a1.seen_msg, "thread 1");
    CHECK_INT_EQ(a2.seen_code, RLK_ERR_SCRIPT);
    CHECK_STR_EQ(a2.seen_msg, "thread 6");
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_URL);
    rlk_free(c);
}

/* Errors of many clients on one thread: the most recent ones are all kept. */
static void test_many_clients_one_thread(void)
{
    enum { N = 12 };
    rlk_client *cs[N];

    for (int i = 0; i < N; i++) {
        cs[i] = dummy_client();
        REQUIRE(cs[i] != NULL);
        rlk_set_error(cs[i], RLK_ERR_SERVER, "client %d", i);
    }
    for (int i = 0; i < N; i++) {
        char want[32];

        snprintf(want, sizeof want, "client %d", i);
        CHECK_INT_EQ(rlk_err(cs[i]), RLK_ERR_SERVER);
        CHECK_STR_EQ(rlk_errstr(cs[i]), want);
    }
    for (int i = 0; i < N; i++)
        rlk_free(cs[i]);
}

/* A freed client's entry does not leak into a new client. */
static void test_new_client_starts_clean(void)
{
    rlk_client *a = dummy_client();
    rlk_options o;
    rlk_client *b;

    REQUIRE(a != NULL);
    rlk_set_error(a, RLK_ERR_SERVER, "old");
    rlk_free(a);
    rlk_options_init(&o);
    o.url = "redis://h:0";
    b = rlk_connect(&o);
    REQUIRE(b != NULL);
    CHECK_INT_EQ(rlk_err(b), RLK_ERR_URL);
    CHECK(strstr(rlk_errstr(b), "old") == NULL);
    rlk_free(b);
}

static void test_options_init(void)
{
    rlk_options o;

    memset(&o, 0x5a, sizeof o);
    rlk_options_init(&o);
    CHECK(o.url == NULL && o.bundle_dir == NULL);
    CHECK_INT_EQ(o.connect_timeout_ms, 0);
    CHECK_INT_EQ(o.command_timeout_ms, 0);
    CHECK_INT_EQ(o.pool_size, 0);
    CHECK_INT_EQ(o.watchdog_lease_ms, 0);
    CHECK_INT_EQ(o.no_preload, 0);
}

/* Defaults and clamping of the options, as the client stores them. */
static void test_option_defaults(void)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = "unix:///nonexistent/rlk-test.sock";
    o.no_preload = 1;
    o.pool_size = -3;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_IO);
    CHECK_STR_CONTAINS(rlk_errstr(c), "connect /nonexistent/rlk-test.sock: ");
    CHECK_INT_EQ(c->connect_timeout_ms, 2000);
    CHECK_INT_EQ(c->command_timeout_ms, 5000);
    CHECK_INT_EQ(c->pool_size, 4);
    CHECK_INT_EQ(c->watchdog_lease_ms, 30000);
    CHECK_STR_EQ(rlk_client_url(c), "unix:///nonexistent/rlk-test.sock?db=0");
    rlk_free(c);
}

static void test_bad_arguments(void)
{
    rlk_client *c = rlk_connect_url("unix:///nonexistent/rlk-test.sock");
    redisReply *r;
    const char *keys[] = {NULL};
    const char *argv[] = {"PING"};

    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_eval(NULL, "x", 0, NULL, 0, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_eval(c, NULL, 0, NULL, 0, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_eval(c, "reentrant/acquire", 0, NULL, 0, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_eval(c, "reentrant/acquire", -1, NULL, 0, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_eval(c, "reentrant/acquire", 1, NULL, 0, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_eval(c, "reentrant/acquire", 1, keys, 0, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_eval(c, "no/such", 0, NULL, 0, NULL, &r), RLK_ERR_NOSUCHSCRIPT);
    CHECK_STR_EQ(rlk_errstr(c), "no script named 'no/such'");
    CHECK_INT_EQ(rlk_command(c, 0, argv, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_command(c, 1, NULL, NULL, &r), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_command(c, 1, argv, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_verify_scripts(c, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_command(c, 1, argv, NULL, &r), RLK_ERR_IO);
    CHECK(r == NULL);
    rlk_free(c);
    rlk_free(NULL);
}

int main(void)
{
    RUN_TEST(test_strerror_names);
    RUN_TEST(test_strerror_unknown);
    RUN_TEST(test_set_error_one_line);
    RUN_TEST(test_set_error_truncates);
    RUN_TEST(test_errors_are_per_thread);
    RUN_TEST(test_many_clients_one_thread);
    RUN_TEST(test_new_client_starts_clean);
    RUN_TEST(test_options_init);
    RUN_TEST(test_option_defaults);
    RUN_TEST(test_bad_arguments);
    return check_summary("test_errors");
}
