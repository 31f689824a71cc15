/*
 * it_cli_messages.c - what rlk says keeps the cause: each case names the
 * cause a message must carry, and the words it must no longer use.
 *
 *   --verbose: the URLs of --redlock and --all members said to come from
 *   there (not "from --url"); rlk elect and rlk fastmulti print their waiting
 *   and acquired lines; RedLock named one way ("redlock NAME"); a holder
 *   without a TTL not shown as "ttl -1 ms";
 *   a stopped (SIGSTOP) server: rlk lock -w 1 says the server did not answer,
 *   rlk check gives up after one command timeout, not two;
 *   RedLock: a refused connection and a wrong password named as such (not "no
 *   reply within 50 ms"), and a warning when it holds with a server down;
 *   NOAUTH: the hint of the URL, --password-file and $RLK_PASSWORD; the library's own
 *     messages (NOAUTH, WRONGPASS) name the URL and rlk_options.password, the CLI's never;
 *   -l out of range: the bound said;
 *   the faster MultiLock's shape refusal names the field;
 *   unlock --force: a token lock, a semaphore, the wrong --kind;
 *   semaphore/latch ttl of a string that is no count: refused as every other
 *   action refuses it;
 *   inspect: a hash of counts without a TTL says what unlock --force does with
 *   it; an election shows its leader, term and value; a semaphore rlk
 *   semaphore made shows as the permit-expirable semaphore it is;
 *   --min-replicas: no C call names (try_set_permits, acquire, member 0).
 *
 * Usage: it_cli_messages PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>
#include <rlk_async.h>
#include <rlk_async_poll.h>

#include <signal.h>
#include <unistd.h>

#define PASSWORD "msg-Pw-3"
#define GO_WAIT "i=0; while [ ! -f \"$T/go\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done"

static rlk_fx_server srv[3];       /* plain */
static char urls[3][128];
static rlk_fx_server secure;       /* requirepass PASSWORD */
static char secure_url[128];
static rlk_fx_server paused;       /* SIGSTOPped by test_stopped_server */
static char paused_url[128];
static char refused_url[128];      /* a loopback port nobody listens on */

#define CHECK_NOT_CONTAINS(hay, needle)                                                        \
    CHECKF(strstr((hay), (needle)) == NULL, "'%s' is still said: %s", (needle), (hay))

/* The last line of s that starts with prefix (a static copy), "" when none. */
static const char *line_with(const char *s, const char *prefix)
{
    static char line[4096];
    const char *at = s, *found = NULL;

    while (at && *at) {
        if (strncmp(at, prefix, strlen(prefix)) == 0)
            found = at;
        at = strchr(at, '\n');
        at = at ? at + 1 : NULL;
    }
    line[0] = '\0';
    if (found) {
        size_t n = strcspn(found, "\n");

        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), found);
    }
    return line;
}

/* Bounded poll until key exists on srv[0]: 0, or -1 after timeout_ms. */
static int wait_exists(const char *key, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (tk_int(&srv[0], "EXISTS %s", key) != 1) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(10);
    }
    return 0;
}

/* A holder started with START in the background, holding until $T/go appears (at most
 * about 20 s); the waiter's stderr is polled for its first report, then go is touched. */
static void waiter_reports(const char *const *hold, const char *const *wait, const char *held_key,
                           const char *what, cli_result *out)
{
    cli_proc h, w;
    cli_result hr;

    unlink(cli_path("go"));
    REQUIRE(cli_start(&h, hold) == 0);
    CHECKF(wait_exists(held_key, 10000) == 0, "%s: the holder never held %s", what, held_key);
    REQUIRE(cli_start(&w, wait) == 0);
    CHECKF(cli_wait_contains(w.err_path, "waiting for", 15000) == 0,
           "%s: no waiting line on stderr", what);
    fclose(fopen(cli_path("go"), "w"));
    *out = cli_collect(&w, cli_wait(&w, CLI_TIMEOUT_MS), 0);
    hr = cli_collect(&h, cli_wait(&h, CLI_TIMEOUT_MS), 0);
    expect_status(&hr, 0, what);
    cli_result_free(&hr);
}

/* ---------------------------------------------------------------- --verbose */

static void test_verbose_member_urls(void)
{
    char list[400], m0[160], m1[160];
    cli_result r;

    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], urls[2]);
    r = RUN("--verbose", "lock", "--redlock", list, "vm-red", "--", "true");
    expect_status(&r, 0, "--verbose lock --redlock");
    CHECK_STR_CONTAINS(r.err, "(url from --redlock)");
    CHECK_NOT_CONTAINS(r.err, "(url from --url)");
    cli_result_free(&r);

    snprintf(m0, sizeof m0, "%s#vm-a", urls[0]);
    snprintf(m1, sizeof m1, "%s#vm-b", urls[1]);
    r = RUN("--verbose", "lock", "--all", m0, m1, "--", "true");
    expect_status(&r, 0, "--verbose lock --all URL#NAME");
    CHECK_STR_CONTAINS(r.err, "(url from an --all member)");
    CHECK_NOT_CONTAINS(r.err, "(url from --url)");
    cli_result_free(&r);
}

static void test_verbose_elect_fastmulti(void)
{
    cli_result r;

    waiter_reports((const char *const[]){"elect", "ve-el", "--", "sh", "-c", GO_WAIT, NULL},
                   (const char *const[]){"--verbose", "elect", "ve-el", "-w", "20", "--", "true",
                                         NULL},
                   "ve-el", "elect --verbose", &r);
    expect_status(&r, 0, "elect --verbose");
    CHECK_STR_CONTAINS(r.err, "election ve-el: waiting for 1 s; held by ");
    CHECK_STR_CONTAINS(r.err, "election ve-el: acquired after ");
    cli_result_free(&r);

    waiter_reports((const char *const[]){"fastmulti", "ve-gr", "a", "b", "--", "sh", "-c",
                                         GO_WAIT, NULL},
                   (const char *const[]){"--verbose", "fastmulti", "ve-gr", "b", "c", "-w", "20",
                                         "--", "true", NULL},
                   "ve-gr", "fastmulti --verbose", &r);
    expect_status(&r, 0, "fastmulti --verbose");
    CHECK_STR_CONTAINS(r.err, "group ve-gr (2 values): waiting for 1 s; 2 values held: ");
    CHECK_STR_CONTAINS(r.err, "group ve-gr (2 values): acquired after ");
    cli_result_free(&r);
}

static void test_verbose_redlock_one_name(void)
{
    char list[400];
    cli_result r;

    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], urls[2]);
    waiter_reports((const char *const[]){"lock", "--redlock", list, "ve-rl", "--", "sh", "-c",
                                         GO_WAIT, NULL},
                   (const char *const[]){"--verbose", "lock", "--redlock", list, "ve-rl", "-w",
                                         "20", "--", "true", NULL},
                   "ve-rl", "lock --redlock --verbose", &r);
    expect_status(&r, 0, "lock --redlock --verbose");
    CHECK_STR_CONTAINS(r.err, "rlk: redlock ve-rl: waiting for 1 s");
    CHECK_STR_CONTAINS(r.err, "rlk: redlock ve-rl: acquired after ");
    CHECK_NOT_CONTAINS(r.err, "redlock lock");
    cli_result_free(&r);
}

static void test_verbose_no_ttl(void)
{
    cli_result r;

    tk_int(&srv[0], "HSET %s %s 1", "ve-nottl", "someone:1");
    r = RUN("--verbose", "lock", "ve-nottl", "-w", "4", "--", "true");
    expect_status(&r, 1, "--verbose lock on a hash without a TTL");
    CHECK_STR_CONTAINS(r.err, "held by someone:1 (reentrant lock, no expiry");
    CHECK_NOT_CONTAINS(r.err, "ttl -1 ms");
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- causes */

static void test_stopped_server(void)
{
    cli_result r;

    REQUIRE(rlk_fx_pause(&paused) == 0);
    r = RUN("--url", paused_url, "lock", "-w", "1", "st-x", "--", "true");
    expect_status(&r, 3, "lock -w 1 on a stopped server");
    expect_one_line_error(&r, "lock -w 1 on a stopped server");
    CHECK_STR_CONTAINS(r.err, "the server did not answer");
    cli_result_free(&r);

    /* One command timeout (5000 ms), said once: not two of them. */
    r = RUN("--url", paused_url, "check");
    expect_status(&r, 3, "check on a stopped server");
    CHECK_STR_CONTAINS(r.err, "no answer within 5000 ms");
    CHECKF(r.ms < 9000, "rlk check on a stopped server took %lld ms (one timeout is 5000)", r.ms);
    cli_result_free(&r);
    CHECK(rlk_fx_resume(&paused) == 0);
}

static void test_redlock_causes(void)
{
    char list[500], wrong[160];
    const char *last;
    cli_result r;

    snprintf(wrong, sizeof wrong, "redis://:wrong-pw@127.0.0.1:%d", secure.port);
    snprintf(list, sizeof list, "%s,%s,%s", urls[0], refused_url, wrong);
    r = RUN("lock", "--redlock", list, "rc-x", "-w", "1", "--", "true");
    expect_status(&r, 3, "redlock with one server refusing, one a wrong password");
    last = line_with(r.err, "rlk: redlock rc-x: acquired on 1 of 3");
    CHECKF(*last, "no line with the servers' failures: %s", r.err);
    CHECK_STR_CONTAINS(last, "Connection refused");
    CHECK_STR_CONTAINS(last, "WRONGPASS");
    CHECKF(strstr(last, "wrong-pw") == NULL, "the password was printed: %s", last);
    cli_result_free(&r);

    /* Held with one server down: said, with its cause. */
    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], refused_url);
    r = RUN("lock", "--redlock", list, "rc-y", "--", "true");
    expect_status(&r, 0, "redlock with 1 of 3 down");
    CHECK_STR_CONTAINS(r.err, "redlock rc-y: warning: acquired on 2 of 3 servers, 1 failing");
    CHECK_STR_CONTAINS(r.err, "Connection refused");
    CHECK_STR_CONTAINS(r.err, "1 more down and the lock is lost");
    cli_result_free(&r);
}

static void test_noauth_hint(void)
{
    cli_result r;
    char bare[128];

    rlk_fx_url(&secure, -1, bare, sizeof bare);
    r = RUN("--url", bare, "lock", "na-x", "--", "true");
    expect_status(&r, 3, "lock on a password server without one");
    expect_one_line_error(&r, "lock on a password server without one");
    CHECK_STR_CONTAINS(r.err, "NOAUTH");
    CHECK_STR_CONTAINS(r.err, "--password-file");
    CHECK_STR_CONTAINS(r.err, "$RLK_PASSWORD");
    CHECK_STR_CONTAINS(r.err, "redis://:PASSWORD@");
    cli_result_free(&r);
}

/* The library's own messages name where a password comes from (the URL, rlk_options.password):
 * a connect without one (NOAUTH) and with a wrong one (WRONGPASS), blocking and async; the CLI
 * names its own sources instead and never rlk_options. */
static void noauth_lib_case(const char *url, const char *password, const char *reply,
                            const char *hint)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    o.password = password;
    c = rlk_connect(&o);
    REQUIRE(c);
    CHECKF(rlk_err(c) == RLK_ERR_AUTH, "connect %s: %d %s", url, rlk_err(c), rlk_errstr(c));
    CHECK_STR_CONTAINS(rlk_errstr(c), reply);
    CHECK_STR_CONTAINS(rlk_errstr(c), hint);
    CHECK_STR_CONTAINS(rlk_errstr(c), "rlk_options.password");
    printf("  library: %s\n", rlk_errstr(c));
    rlk_free(c);
}

/* The same through the non-blocking API (its poll adapter): nothing is connected until the loop
 * runs, and an async lock request (wait_ms 0) on that client ends at once with the refusal and
 * the same hint; a refused AUTH is also rlk_async_conn_errstr's. Before, the async request's
 * message was the bare reply ("NOAUTH Authentication required.") and, with a wrong password, a
 * wait_ms 0 request had no answer within 10 s (the refused set-up was ridden out as a dropped
 * connection). */
typedef struct noauth_res {
    int calls, err;
    char errstr[512];
} noauth_res;

static void noauth_async_cb(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    noauth_res *x = privdata;

    (void)ac;
    x->calls++;
    x->err = r->err;
    snprintf(x->errstr, sizeof x->errstr, "%s", r->errstr ? r->errstr : "");
}

static void noauth_async_case(const char *url, const char *password, const char *reply,
                              const char *hint)
{
    long long t0 = rlk_fx_now_ms();
    rlk_async_poll p;
    rlk_async *ac;
    rlk_options o;
    noauth_res x = {0};
    const char *why;

    rlk_options_init(&o);
    o.url = url;
    o.password = password;
    REQUIRE((ac = rlk_async_new(&o)) != NULL);
    REQUIRE(rlk_async_poll_attach(ac, &p) == RLK_OK);
    REQUIRE(rlk_async_lock(ac, RLK_KIND_LOCK, "na-async", 1, 0, 30000, noauth_async_cb, &x));
    while (!x.calls && rlk_fx_now_ms() - t0 < 10000)
        rlk_async_poll_turn(&p, 50 * 1000000LL);
    CHECKF(x.calls == 1, "async lock on %s: %d callbacks in 10 s", url, x.calls);
    CHECKF(x.err != RLK_OK, "async lock on %s succeeded", url);
    CHECK_STR_CONTAINS(x.errstr, reply);
    CHECK_STR_CONTAINS(x.errstr, hint);
    CHECK_STR_CONTAINS(x.errstr, "rlk_options.password");
    /* A refused AUTH is a connection that could not be made (RLK_ERR_IO, the request's own
     * wait rides it out); NOAUTH refuses a call on a connection that is up (RLK_ERR_AUTH). */
    why = rlk_async_conn_errstr(ac);
    if (password || strstr(url, "@")) {
        CHECKF(x.err == RLK_ERR_IO, "async lock on %s: error %d, expected RLK_ERR_IO", url, x.err);
        CHECKF(why && strstr(why, reply) && strstr(why, "rlk_options.password"),
               "rlk_async_conn_errstr: %s", why ? why : "(NULL)");
    } else {
        CHECKF(x.err == RLK_ERR_AUTH, "async lock on %s: error %d, expected RLK_ERR_AUTH", url,
               x.err);
    }
    printf("  async: %d %s\n", x.err, x.errstr);
    rlk_async_free(ac);
    rlk_async_poll_free(&p);
}

static void test_noauth_hint_library(void)
{
    char bare[128], wrong[128];

    rlk_fx_url(&secure, -1, bare, sizeof bare);
    snprintf(wrong, sizeof wrong, "redis://:wrong-pw@127.0.0.1:%d", secure.port);
    noauth_lib_case(bare, NULL, "NOAUTH", "redis://:PASSWORD@");
    noauth_lib_case(wrong, NULL, "WRONGPASS", "the URL's");
    noauth_lib_case(bare, "wrong-pw", "WRONGPASS", "the URL's");
    noauth_async_case(bare, NULL, "NOAUTH", "redis://:PASSWORD@");
    noauth_async_case(wrong, NULL, "WRONGPASS", "the URL's");
    noauth_async_case(bare, "wrong-pw", "WRONGPASS", "the URL's");
    {
        cli_result r = RUN("--url", wrong, "lock", "na-w", "--", "true");

        expect_status(&r, 3, "lock with a wrong password");
        expect_one_line_error(&r, "lock with a wrong password");
        CHECK_STR_CONTAINS(r.err, "WRONGPASS");
        CHECK_STR_CONTAINS(r.err, "--password-file");
        CHECKF(strstr(r.err, "rlk_options") == NULL, "the CLI names the library's options: %s",
               r.err);
        CHECKF(strstr(r.err, "wrong-pw") == NULL, "the password was printed: %s", r.err);
        cli_result_free(&r);
        r = RUN("--url", bare, "lock", "na-x", "--", "true");
        CHECKF(strstr(r.err, "rlk_options") == NULL, "the CLI names the library's options: %s",
               r.err);
        cli_result_free(&r);
    }
}

static void test_lease_bound(void)
{
    cli_result r = RUN("lock", "-l", "99999999999999999", "lb-x", "--", "true");

    expect_status(&r, 2, "-l 99999999999999999");
    CHECK_STR_CONTAINS(r.err, "at most 1000000000000 (about 31 years)");
    cli_result_free(&r);
}

static void test_fastmulti_field_name(void)
{
    cli_result r;

    tk_int(&srv[0], "HSET %s colour blue", "fm-shape");
    r = RUN("fastmulti", "fm-shape", "a", "--", "true");
    expect_status(&r, 4, "fastmulti on a hash that is no group");
    CHECK_STR_CONTAINS(r.err, "(field 1, 'colour', is neither");
    cli_result_free(&r);
}

static void test_force_unlock_kinds(void)
{
    cli_result r;

    tk_int(&srv[0], "SET %s %s", "fu-tok", "a-token-of-someone");
    r = RUN("unlock", "--force", "fu-tok");
    expect_status(&r, 4, "unlock --force of a token lock");
    expect_one_line_error(&r, "unlock --force of a token lock");
    CHECK_STR_CONTAINS(r.err, "token locks have no force unlock");
    CHECK_INT_EQ(tk_int(&srv[0], "EXISTS %s", "fu-tok"), 1);
    cli_result_free(&r);

    r = RUN("semaphore", "fu-sem", "--permits", "2", "--", "true");
    expect_status(&r, 0, "semaphore run");
    cli_result_free(&r);
    r = RUN("unlock", "--force", "fu-sem");
    expect_status(&r, 4, "unlock --force of a semaphore");
    CHECK_STR_CONTAINS(r.err, "not a lock");
    cli_result_free(&r);

    /* A read-write lock (its mode field) named as the reentrant lock: the --kind it takes. */
    tk_int(&srv[0], "HSET %s mode read", "fu-rw");
    tk_int(&srv[0], "HSET %s %s 1", "fu-rw", "r1:1");
    tk_int(&srv[0], "PEXPIRE %s 60000", "fu-rw");
    r = RUN("unlock", "--force", "--kind", "reentrant", "fu-rw");
    expect_status(&r, 4, "unlock --force --kind reentrant of a read-write lock");
    expect_one_line_error(&r, "unlock --force --kind reentrant of a read-write lock");
    CHECK_STR_CONTAINS(r.err, "it is a read-write lock");
    CHECK_STR_CONTAINS(r.err, "--kind rwlock fu-rw");
    CHECK_INT_EQ(tk_int(&srv[0], "EXISTS %s", "fu-rw"), 1);
    cli_result_free(&r);
}

static void test_ttl_of_no_count(void)
{
    static const char *const kinds[] = {"semaphore", "latch"};
    cli_result r;

    tk_int(&srv[0], "SET %s %s", "tt-json", "{\"a\":1}");
    for (size_t k = 0; k < 2; k++) {
        r = RUN(kinds[k], "tt-json", "ttl");
        expect_status(&r, 4, kinds[k]);
        CHECK_STR_EQ(r.out, "");
        CHECK_STR_CONTAINS(r.err, "holds a string that is not an integer count");
        cli_result_free(&r);
    }
    tk_int(&srv[0], "SET %s 3", "tt-count");
    r = RUN("semaphore", "tt-count", "ttl");
    expect_status(&r, 0, "semaphore ttl of a count");
    CHECK_STR_EQ(r.out, "-1\n");
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- inspect */

static void test_inspect_no_ttl_hash(void)
{
    cli_result r;

    tk_int(&srv[0], "HSET %s %s 2", "in-nottl", "app:1");
    r = RUN("inspect", "in-nottl");
    expect_status(&r, 0, "inspect a hash of counts without a TTL");
    CHECK_STR_CONTAINS(r.out, "rlk unlock --force refuses it");
    CHECK_STR_CONTAINS(r.out, "rlk unlock --force --kind reentrant in-nottl removes it");
    cli_result_free(&r);
    r = RUN("inspect", "in-nottl", "--json");
    CHECK_STR_CONTAINS(r.out, "\"no_ttl\":true");
    cli_result_free(&r);
    /* What the note says unlock --force does, it does. */
    r = RUN("unlock", "--force", "in-nottl");
    expect_status(&r, 4, "unlock --force of the hash without a TTL");
    CHECK_INT_EQ(tk_int(&srv[0], "EXISTS %s", "in-nottl"), 1);
    cli_result_free(&r);
    r = RUN("unlock", "--force", "--kind", "reentrant", "in-nottl");
    expect_status(&r, 0, "unlock --force --kind reentrant of the hash without a TTL");
    CHECK_INT_EQ(tk_int(&srv[0], "EXISTS %s", "in-nottl"), 0);
    cli_result_free(&r);
}

static void test_inspect_election(void)
{
    cli_result r = RUN("elect", "in-el", "--value", "node-7", "--", "sh", "-c",
                       "\"$RLK_BIN\" inspect in-el > \"$T/el.txt\"; "
                       "\"$RLK_BIN\" inspect in-el --json > \"$T/el.json\"; "
                       "echo \"$RLK_ELECT_TERM\" > \"$T/el.term\"");
    char *text, *json, *term, line[128];

    expect_status(&r, 0, "elect with inspect inside");
    cli_result_free(&r);
    text = cli_slurp(cli_path("el.txt"));
    json = cli_slurp(cli_path("el.json"));
    term = cli_slurp(cli_path("el.term"));
    term[strcspn(term, "\n")] = '\0';
    CHECK_STR_PREFIX(text, "in-el: election");
    CHECK_STR_CONTAINS(text, "value:   node-7\n");
    snprintf(line, sizeof line, "term:    %s\n", term);
    CHECK_STR_CONTAINS(text, line);
    CHECK_STR_CONTAINS(text, "leader:  ");
    CHECK_STR_CONTAINS(json, "\"election\":{\"leader\":\"");
    CHECK_STR_CONTAINS(json, "\"value\":\"node-7\"");
    free(text);
    free(json);
    free(term);
    r = RUN("inspect", "in-el");
    CHECK_STR_CONTAINS(r.out, "leader:  none\n");
    cli_result_free(&r);
}

static void test_inspect_marked_semaphore(void)
{
    cli_result r = RUN("semaphore", "in-sem", "--permits", "3", "--", "true");

    expect_status(&r, 0, "semaphore run");
    cli_result_free(&r);
    r = RUN("inspect", "in-sem");
    CHECK_STR_PREFIX(r.out, "in-sem: permit-expirable semaphore\navailable: 3\nheld:      0\n");
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- --min-replicas */

static void test_min_replicas_words(void)
{
    static const char *const c_names[] = {"try_set_permits", "try_set_count", "acquire ",
                                          "member 0", "multilock add"};
    const char *const *runs[] = {
        (const char *const[]){"semaphore", "mr-sem", "--permits", "2", "--", "true", NULL},
        (const char *const[]){"latch", "mr-latch", "set", "2", NULL},
        (const char *const[]){"lock", "mr-lock", "--", "true", NULL},
        (const char *const[]){"lock", "--all", "mr-a", "mr-b", "--", "true", NULL},
    };

    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        const char *argv[16] = {"--min-replicas", "1", "--min-replicas-timeout", "100"};
        int n = 4;
        cli_result r;

        for (int j = 0; runs[k][j] && n < 15; j++)
            argv[n++] = runs[k][j];
        argv[n] = NULL;
        r = cli_run(argv);
        expect_status(&r, 10, runs[k][0]);
        CHECK_STR_CONTAINS(r.err, "only 0 of 1 replica acknowledged");
        CHECK_STR_CONTAINS(r.err, "--min-replicas");
        for (size_t w = 0; w < sizeof c_names / sizeof c_names[0]; w++)
            CHECK_NOT_CONTAINS(r.err, c_names[w]);
        cli_result_free(&r);
    }
}

int main(int argc, char **argv)
{
    rlk_fx_config cfg;
    int rc = cli_main_begin(argc, argv, srv, 3, urls[0], sizeof urls[0]);

    if (rc >= 0)
        return rc;
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    rlk_fx_config_init(&cfg);
    cfg.requirepass = PASSWORD;
    if (rlk_fx_start(&secure, &cfg) != 0)
        return 1;
    rlk_fx_config_init(&cfg);
    if (rlk_fx_start(&paused, &cfg) != 0)
        return 1;
    rlk_fx_url(&secure, -1, secure_url, sizeof secure_url);
    rlk_fx_url(&paused, -1, paused_url, sizeof paused_url);
    snprintf(refused_url, sizeof refused_url, "redis://127.0.0.1:%d", rlk_fx_refused_port());
    RUN_TEST(test_verbose_member_urls);
    RUN_TEST(test_verbose_elect_fastmulti);
    RUN_TEST(test_verbose_redlock_one_name);
    RUN_TEST(test_verbose_no_ttl);
    RUN_TEST(test_stopped_server);
    RUN_TEST(test_redlock_causes);
    RUN_TEST(test_noauth_hint);
    RUN_TEST(test_noauth_hint_library);
    RUN_TEST(test_lease_bound);
    RUN_TEST(test_fastmulti_field_name);
    RUN_TEST(test_force_unlock_kinds);
    RUN_TEST(test_ttl_of_no_count);
    RUN_TEST(test_inspect_no_ttl_hash);
    RUN_TEST(test_inspect_election);
    RUN_TEST(test_inspect_marked_semaphore);
    RUN_TEST(test_min_replicas_words);
    rlk_fx_stop(&secure);
    rlk_fx_stop(&paused);
    cli_main_end(srv, 3);
    return check_summary("it_cli_messages");
}
