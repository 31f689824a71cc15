/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_fixture.c - the redis-server fixture itself: start, stop, restart,
 * pause, several servers, and no server left behind when a test dies; the
 * cluster fixture (3 masters + 3 replicas: state, slots, MOVED, failover,
 * slot migration with ASK) and the sentinel fixture (master + replica + 3
 * sentinels: discovery, SENTINEL FAILOVER), each stopped by PID.
 * Talks to Redis with plain hiredis only (no rlk library).
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "sentinel.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* ------------------------------------------------------------ helpers */

static int process_gone(pid_t pid)
{
    char path[64], state = '?';
    FILE *f;
    int n;

    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    /* Reparented orphans may linger as zombies where nobody reaps them. */
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (!f)
        return 1;
    n = fscanf(f, "%*d (%*[^)]) %c", &state);
    fclose(f);
    return n == 1 && state == 'Z';
}

/* Bounded poll: 1 once pid is gone within ms. */
static int wait_gone(pid_t pid, long ms)
{
    long long deadline = rlk_fx_now_ms() + ms;
    while (!process_gone(pid)) {
        if (rlk_fx_now_ms() >= deadline)
            return 0;
        rlk_fx_sleep_ms(5);
    }
    return 1;
}

static int dir_exists(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The reply of one command, as a string ("" for non-strings); caller frees. */
static char *command_str(const rlk_fx_server *s, const char *cmd)
{
    redisReply *r = rlk_fx_command(s, cmd);
    char *out;

    if (!r)
        return strdup("(connection error)");
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
        r->type == REDIS_REPLY_ERROR)
        out = strdup(r->str);
    else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[1]->type == REDIS_REPLY_STRING)
        out = strdup(r->element[1]->str); /* CONFIG GET name -> value */
    else
        out = strdup("");
    freeReplyObject(r);
    return out;
}

static int check_command(const rlk_fx_server *s, const char *cmd, const char *want)
{
    char *got = command_str(s, cmd);
    int ok = CHECKF(strcmp(got, want) == 0, "%s -> \"%s\", expected \"%s\"", cmd, got, want);
    free(got);
    return ok;
}

/* ------------------------------------------------------------ tests */

static void test_start_stop(void)
{
    rlk_fx_server s;
    pid_t pid;
    char dir[RLK_FX_PATH_MAX];
    int port;

    REQUIRE(rlk_fx_start(&s, NULL) == 0);
    pid = s.pid;
    port = s.port;
    memcpy(dir, s.dir, sizeof dir);
    CHECK(pid > 0);
    CHECK(port >= 1024 && port != 6379);
    CHECK(dir_exists(dir));
    check_command(&s, "PING", "PONG");
    check_command(&s, "CONFIG GET save", "");
    check_command(&s, "CONFIG GET appendonly", "no");
    check_command(&s, "CONFIG GET bind", "127.0.0.1");
    check_command(&s, "CONFIG GET dir", dir);

    CHECK(rlk_fx_stop(&s) == 0);
    CHECK(s.pid == 0);
    CHECK(wait_gone(pid, 2000));
    CHECK(!dir_exists(dir));
    CHECK(rlk_fx_command(&s, "PING") == NULL); /* the port refuses now */
    CHECK(rlk_fx_stop(&s) == 0);                    /* stopping twice is harmless */
}

static void test_unixsocket(void)
{
    rlk_fx_config cfg;
    rlk_fx_server s;
    redisContext *ctx;
    redisReply *r;
    char url[512];

    rlk_fx_config_init(&cfg);
    cfg.unixsocket = 1;
    REQUIRE(rlk_fx_start(&s, &cfg) == 0);
    CHECK(rlk_fx_unix_url(&s, 2, url, sizeof url) == 0);
    CHECK_STR_PREFIX(url, "unix:///");
    CHECK_STR_CONTAINS(url, "?db=2");
    ctx = redisConnectUnix(s.sock_path);
    if (CHECK(ctx && !ctx->err)) {
        r = redisCommand(ctx, "PING");
        CHECK(r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0);
        if (r)
            freeReplyObject(r);
    }
    if (ctx)
        redisFree(ctx);
    rlk_fx_stop(&s);
}

static void test_requirepass_and_acl_user(void)
{
    rlk_fx_config cfg;
    rlk_fx_server s;
    char *got;

    rlk_fx_config_init(&cfg);
    cfg.requirepass = "s3cret";
    cfg.acl_user = "alice on >alicepw ~* &* +@all";
    REQUIRE(rlk_fx_start(&s, &cfg) == 0);
    check_command(&s, "PING", "PONG"); /* the fixture authenticates */

    s.password[0] = '\0'; /* now without AUTH */
    got = command_str(&s, "PING");
    CHECK_STR_PREFIX(got, "NOAUTH");
    free(got);
    got = command_str(&s, "AUTH alice alicepw");
    CHECK_STR_EQ(got, "OK");
    free(got);
    got = command_str(&s, "AUTH alice wrong");
    CHECK_STR_PREFIX(got, "WRONGPASS");
    free(got);
    rlk_fx_stop(&s);
}

static void test_restart_same_port(void)
{
    rlk_fx_server s;
    redisReply *r;
    pid_t old_pid;
    int port;

    REQUIRE(rlk_fx_start(&s, NULL) == 0);
    old_pid = s.pid;
    port = s.port;
    r = rlk_fx_command(&s, "SET k v");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);

    REQUIRE(rlk_fx_restart(&s) == 0);
    CHECK_INT_EQ(s.port, port);
    CHECK(s.pid > 0 && s.pid != old_pid);
    CHECK(process_gone(old_pid));
    r = rlk_fx_command(&s, "EXISTS k");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0); /* no persistence */
    if (r)
        freeReplyObject(r);

    REQUIRE(rlk_fx_crash(&s) == 0);
    CHECK(rlk_fx_command(&s, "PING") == NULL);
    REQUIRE(rlk_fx_restart(&s) == 0);
    CHECK_INT_EQ(s.port, port);
    check_command(&s, "PING", "PONG");
    rlk_fx_stop(&s);
}

static void test_pause_resume(void)
{
    rlk_fx_server s;
    redisContext *ctx;
    redisReply *r;
    long long t0, elapsed;

    REQUIRE(rlk_fx_start(&s, NULL) == 0);
    ctx = rlk_fx_connect(&s);
    REQUIRE(ctx != NULL);
    redisSetTimeout(ctx, (struct timeval){0, 200000});

    REQUIRE(rlk_fx_pause(&s) == 0);
    t0 = rlk_fx_now_ms();
    r = redisCommand(ctx, "PING");
    elapsed = rlk_fx_now_ms() - t0;
    CHECKF(r == NULL, "a stopped server answered");
    CHECKF(elapsed >= 150 && elapsed < 5000, "PING timed out after %lld ms", elapsed);
    if (r)
        freeReplyObject(r);
    redisFree(ctx);

    REQUIRE(rlk_fx_resume(&s) == 0);
    check_command(&s, "PING", "PONG");

    /* Pausing twice and stopping a paused server both work. */
    REQUIRE(rlk_fx_pause(&s) == 0);
    CHECK(rlk_fx_stop(&s) == 0);
}

static void test_client_pause(void)
{
    rlk_fx_server s;
    redisReply *r;
    long long t0, elapsed;

    REQUIRE(rlk_fx_start(&s, NULL) == 0);
    REQUIRE(rlk_fx_client_pause(&s, 300) == 0);
    t0 = rlk_fx_now_ms();
    r = rlk_fx_command(&s, "PING");
    elapsed = rlk_fx_now_ms() - t0;
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    CHECKF(elapsed >= 200, "PING answered after %lld ms during CLIENT PAUSE 300", elapsed);
    if (r)
        freeReplyObject(r);
    rlk_fx_stop(&s);
}

static void test_start_n(void)
{
    rlk_fx_server s[5];

    REQUIRE(rlk_fx_start_n(s, 5, NULL) == 0);
    for (int i = 0; i < 5; i++) {
        check_command(&s[i], "PING", "PONG");
        for (int j = 0; j < i; j++)
            CHECK(s[i].port != s[j].port && s[i].pid != s[j].pid);
    }
    rlk_fx_stop_n(s, 5);
    for (int i = 0; i < 5; i++)
        CHECK(s[i].pid == 0 && s[i].dir[0] == '\0');
}

/* A refused port refuses connections, and a server (which binds with SO_REUSEADDR, as Redis
 * and Valkey do) cannot take it while the test runs. */
static void test_refused_port_refuses(void)
{
    int port = rlk_fx_refused_port(), fd, one = 1;
    struct sockaddr_in addr;
    redisContext *ctx;

    REQUIRE(port > 0);
    ctx = redisConnect("127.0.0.1", port);
    CHECK(ctx == NULL || ctx->err != 0);
    if (ctx)
        redisFree(ctx);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECKF(bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1) != 0,
           "a server could take the refused port %d", port);
    close(fd);
}

/* How a child test process ends after starting a server. */
enum child_end { END_EXIT, END_ABORT, END_SIGKILL, END_SEGV };

static void child_starts_and_dies(int wfd, enum child_end how)
{
    rlk_fx_server s;
    char msg[RLK_FX_PATH_MAX + 32];
    struct rlimit no_core = {0, 0};
    int n;

    setrlimit(RLIMIT_CORE, &no_core); /* abort/SIGSEGV below: no core file */
    if (rlk_fx_start(&s, NULL) != 0)
        _exit(3);
    n = snprintf(msg, sizeof msg, "%ld %s\n", (long)s.pid, s.dir);
    if (write(wfd, msg, (size_t)n) != n)
        _exit(4);
    close(wfd);
    switch (how) {
    case END_EXIT:
        exit(0); /* atexit cleans up */
    case END_ABORT:
        abort();
    case END_SEGV:
        raise(SIGSEGV);
        break;
    case END_SIGKILL:
        raise(SIGKILL); /* nothing runs: PR_SET_PDEATHSIG must do it */
        break;
    }
    _exit(5);
}

static void check_no_leftover(enum child_end how, const char *label)
{
    int fds[2], status;
    char buf[RLK_FX_PATH_MAX + 32] = {0}, dir[RLK_FX_PATH_MAX] = {0};
    long server_pid = 0;
    pid_t child;
    ssize_t n;

    REQUIRE(pipe(fds) == 0);
    fflush(NULL);
    child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(fds[0]);
        child_starts_and_dies(fds[1], how);
    }
    close(fds[1]);
    n = read(fds[0], buf, sizeof buf - 1); /* blocks until the child wrote or died */
    close(fds[0]);
    waitpid(child, &status, 0);
    REQUIREF(n > 0 && sscanf(buf, "%ld %255s", &server_pid, dir) == 2,
             "%s: child did not report a server", label);
    CHECKF(wait_gone((pid_t)server_pid, 3000), "%s: server pid %ld still alive", label,
           server_pid);
    waitpid((pid_t)server_pid, NULL, WNOHANG); /* reap it if it became ours */
    if (how != END_SIGKILL) /* a SIGKILLed test cannot remove its temp dir */
        CHECKF(!dir_exists(dir), "%s: temp dir %s left behind", label, dir);
    else if (dir_exists(dir)) {
        char cmd[RLK_FX_PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
}

/* ------------------------------------------------------------ cluster */

/* The cluster spec's examples of HASH_SLOT and its CRC16. */
static void test_key_slot(void)
{
    CHECK_INT_EQ(rlk_fx_crc16("123456789", 9), 0x31C3);
    CHECK_INT_EQ(rlk_fx_key_slot("foo", 3), 12182);
    CHECK_INT_EQ(rlk_fx_key_slot("{user1000}.following", 20), rlk_fx_key_slot("user1000", 8));
    CHECK_INT_EQ(rlk_fx_key_slot("foo{bar}{zap}", 13), rlk_fx_key_slot("bar", 3));
    CHECK_INT_EQ(rlk_fx_key_slot("foo{{bar}}zap", 13), rlk_fx_key_slot("{bar", 4));
    CHECK_INT_EQ(rlk_fx_key_slot("foo{}{bar}", 10), (int)(rlk_fx_crc16("foo{}{bar}", 10) & 16383));
    CHECK_INT_EQ(rlk_fx_key_slot("{rlk}", 5), rlk_fx_key_slot("rlk", 3));
}

/* An error reply's text ("" when the reply is not an error); caller frees. */
static char *error_of(redisReply *r)
{
    char *out = strdup(r && r->type == REDIS_REPLY_ERROR ? r->str : "");

    if (r)
        freeReplyObject(r);
    return out;
}

static int count_role(const rlk_fx_cluster *c, int role)
{
    int n = 0;

    for (int i = 0; i < c->n; i++)
        n += rlk_fx_cluster_role(c, i) == role;
    return n;
}

static void test_cluster(void)
{
    rlk_fx_cluster c;
    pid_t pids[RLK_FX_CLUSTER_NODES];
    char dirs[RLK_FX_CLUSTER_NODES][RLK_FX_PATH_MAX], urls[512], want[64], map[1024], *err;
    const char *key = "{rlk-fx}k";
    int slot = rlk_fx_key_slot(key, strlen(key)), owner, other = -1, replica, dst = -1, moved;
    long long t0;
    redisReply *r;

    t0 = rlk_fx_now_ms();
    REQUIRE(rlk_fx_cluster_start(&c) == 0);
    printf("  cluster: 6 nodes up, created and agreed in %lld ms\n", c.start_ms);
    for (int i = 0; i < c.n; i++) {
        pids[i] = c.node[i].pid;
        memcpy(dirs[i], c.node[i].dir, sizeof dirs[i]);
        CHECK(pids[i] > 0);
        CHECK(c.node[i].bus_port > 0 && c.node[i].bus_port != c.node[i].port);
    }
    CHECK_INT_EQ(count_role(&c, 'M'), 3);
    CHECK_INT_EQ(count_role(&c, 'S'), 3);
    CHECK_INT_EQ(rlk_fx_cluster_wait_ok(&c, 1000), 0);
    CHECK_INT_EQ(rlk_fx_cluster_slot_map(&c, 0, map, sizeof map), 0);
    printf("  slot map: %s\n", map);
    CHECK_INT_EQ(rlk_fx_cluster_urls(&c, urls, sizeof urls), 0);
    snprintf(want, sizeof want, "redis://127.0.0.1:%d,", c.node[0].port);
    CHECK_STR_PREFIX(urls, want);
    CHECK_INT_EQ((long long)(strchr(urls, ',') ? 6 : 0), 6);

    /* The owner takes the key; another master redirects with the slot and the owner's port. */
    owner = rlk_fx_cluster_key_owner(&c, key);
    REQUIRE(owner >= 0);
    CHECK_INT_EQ(rlk_fx_cluster_role(&c, owner), 'M');
    r = rlk_fx_cluster_command(&c, owner, "SET %s %s", key, "v1");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    for (int i = 0; i < c.n && other < 0; i++)
        if (i != owner && rlk_fx_cluster_role(&c, i) == 'M')
            other = i;
    REQUIRE(other >= 0);
    err = error_of(rlk_fx_cluster_command(&c, other, "GET %s", key));
    /* Valkey 8 names in MOVED / ASK the port of the asking connection's kind: to the fixture's
     * plain control socket a TLS-only node's plain port is 0 (docs/servers.md). */
    snprintf(want, sizeof want, "MOVED %d 127.0.0.1:%d", slot,
             c.node[owner].tls && rlk_fx_is_valkey() ? 0 : c.node[owner].port);
    CHECK_STR_EQ(err, want);
    free(err);

    /* CLUSTER FAILOVER on the owner's replica: roles flip, the key is there. */
    replica = rlk_fx_cluster_replica_of(&c, owner);
    REQUIRE(replica >= 0);
    CHECK_INT_EQ(rlk_fx_cluster_master_of(&c, replica), owner);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fx_cluster_failover(&c, replica, 15000), 0);
    printf("  cluster failover: %lld ms\n", rlk_fx_now_ms() - t0);
    CHECK_INT_EQ(rlk_fx_cluster_role(&c, replica), 'M');
    CHECK_INT_EQ(rlk_fx_cluster_role(&c, owner), 'S');
    CHECK_INT_EQ(rlk_fx_cluster_key_owner(&c, key), replica);
    r = rlk_fx_cluster_command(&c, replica, "GET %s", key);
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "v1") == 0);
    if (r)
        freeReplyObject(r);

    /* Slot migration step by step: ASK for a moved key while MIGRATING, then the new owner. */
    owner = replica;
    dst = other;
    CHECK_INT_EQ(rlk_fx_cluster_set_importing(&c, slot, dst, owner), 0);
    CHECK_INT_EQ(rlk_fx_cluster_set_migrating(&c, slot, owner, dst), 0);
    moved = rlk_fx_cluster_migrate_keys(&c, slot, owner, dst);
    CHECK_INT_EQ(moved, 1);
    err = error_of(rlk_fx_cluster_command(&c, owner, "GET %s", key));
    snprintf(want, sizeof want, "ASK %d 127.0.0.1:%d", slot,
             c.node[dst].tls && rlk_fx_is_valkey() ? 0 : c.node[dst].port);
    CHECK_STR_EQ(err, want);
    free(err);
    CHECK_INT_EQ(rlk_fx_cluster_set_node(&c, slot, dst), 0);
    t0 = rlk_fx_now_ms();
    while (rlk_fx_now_ms() - t0 < 10000) {     /* bounded: every node learns the new owner */
        int agreed = 1;

        for (int i = 0; i < c.n; i++)
            agreed &= rlk_fx_cluster_slot_owner(&c, i, slot) == dst;
        if (agreed)
            break;
        rlk_fx_sleep_ms(20);
    }
    for (int i = 0; i < c.n; i++)
        CHECKF(rlk_fx_cluster_slot_owner(&c, i, slot) == dst, "node %d: slot %d on node %d, not %d",
               i, slot, rlk_fx_cluster_slot_owner(&c, i, slot), dst);
    r = rlk_fx_cluster_command(&c, dst, "GET %s", key);
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "v1") == 0);
    if (r)
        freeReplyObject(r);
    /* The all-in-one move brings it back. */
    CHECK_INT_EQ(rlk_fx_cluster_move_slot(&c, slot, dst, owner, 10000), 0);
    CHECK_INT_EQ(rlk_fx_cluster_key_owner(&c, key), owner);
    CHECK_INT_EQ(rlk_fx_cluster_wait_ok(&c, 10000), 0);

    rlk_fx_cluster_stop(&c);
    for (int i = 0; i < RLK_FX_CLUSTER_NODES; i++) {
        CHECKF(wait_gone(pids[i], 2000), "cluster node pid %ld still running", (long)pids[i]);
        CHECKF(!dir_exists(dirs[i]), "%s left behind", dirs[i]);
    }
    rlk_fx_cluster_stop(&c);    /* twice is harmless */
}

/* ------------------------------------------------------------ sentinel */

static void test_sentinel(void)
{
    rlk_fx_sentinel s;
    pid_t pids[2 + RLK_FX_SENTINELS];
    char dirs[2 + RLK_FX_SENTINELS][RLK_FX_PATH_MAX], urls[256], want[64];
    long long t0;

    REQUIRE(rlk_fx_sentinel_start_quick(&s, "fxmaster") == 0);
    printf("  sentinel: master, replica and 3 sentinels up and agreed in %lld ms\n", s.start_ms);
    for (int i = 0; i < 2 + RLK_FX_SENTINELS; i++) {
        const rlk_fx_server *srv = i < 2 ? &s.data[i] : &s.sentinel[i - 2];

        pids[i] = srv->pid;
        memcpy(dirs[i], srv->dir, sizeof dirs[i]);
        CHECK(pids[i] > 0);
    }
    for (int i = 0; i < RLK_FX_SENTINELS; i++)
        CHECK_INT_EQ(rlk_fx_sentinel_master_port(&s, i), s.data[0].port);
    CHECK_INT_EQ(rlk_fx_sentinel_master(&s), 0);
    CHECK_INT_EQ(rlk_fx_sentinel_role(&s, 0), 'M');
    CHECK_INT_EQ(rlk_fx_sentinel_role(&s, 1), 'S');
    check_command(&s.sentinel[0], "SENTINEL CKQUORUM fxmaster",
                  "OK 3 usable Sentinels. Quorum and failover authorization can be reached");
    CHECK_INT_EQ(rlk_fx_sentinel_urls(&s, urls, sizeof urls), 0);
    snprintf(want, sizeof want, "redis://127.0.0.1:%d,", s.sentinel[0].port);
    CHECK_STR_PREFIX(urls, want);

    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fx_sentinel_failover(&s, 20000), 0);
    printf("  sentinel failover: %lld ms\n", rlk_fx_now_ms() - t0);
    for (int i = 0; i < RLK_FX_SENTINELS; i++)
        CHECK_INT_EQ(rlk_fx_sentinel_master_port(&s, i), s.data[1].port);
    CHECK_INT_EQ(rlk_fx_sentinel_master(&s), 1);
    CHECK_INT_EQ(rlk_fx_sentinel_role(&s, 1), 'M');
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fx_sentinel_wait_demoted(&s, 0, 20000), 0);
    printf("  old master demoted %lld ms later\n", rlk_fx_now_ms() - t0);
    CHECK_INT_EQ(rlk_fx_sentinel_role(&s, 0), 'S');

    rlk_fx_sentinel_stop(&s);
    for (int i = 0; i < 2 + RLK_FX_SENTINELS; i++) {
        CHECKF(wait_gone(pids[i], 2000), "pid %ld still running", (long)pids[i]);
        CHECKF(!dir_exists(dirs[i]), "%s left behind", dirs[i]);
    }
    rlk_fx_sentinel_stop(&s);   /* twice is harmless */
}

static void test_no_server_left_behind(void)
{
#ifdef __linux__
    /* Orphaned servers are reparented to this process, which reaps them
     * (instead of leaving zombies to init). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    check_no_leftover(END_EXIT, "exit");
    check_no_leftover(END_ABORT, "abort");
    check_no_leftover(END_SEGV, "segv");
    check_no_leftover(END_SIGKILL, "sigkill");
}

int main(void)
{
    RUN_TEST(test_start_stop);
    RUN_TEST(test_unixsocket);
    RUN_TEST(test_requirepass_and_acl_user);
    RUN_TEST(test_restart_same_port);
    RUN_TEST(test_pause_resume);
    RUN_TEST(test_client_pause);
    RUN_TEST(test_start_n);
    RUN_TEST(test_refused_port_refuses);
    RUN_TEST(test_key_slot);
    RUN_TEST(test_cluster);
    RUN_TEST(test_sentinel);
    RUN_TEST(test_no_server_left_behind);
    return check_summary("it_fixture");
}
