/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tk_util.c - see tk_util.h.
 */
#include "tk_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

rlk_client *tk_connect(const char *url, long long watchdog_lease_ms, int pool_size)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    o.watchdog_lease_ms = watchdog_lease_ms;
    o.pool_size = pool_size;
    c = rlk_connect(&o);
    if (!c) {
        fprintf(stderr, "  rlk_connect %s: out of memory\n", url);
        return NULL;
    }
    if (rlk_err(c) != RLK_OK) {
        fprintf(stderr, "  rlk_connect %s: %s %s\n", url, rlk_strerror(rlk_err(c)), rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

/* ---------------------------------------------------------------- stall detector */

static void *tk_stall_main(void *arg)
{
    tk_stall *s = arg;
    long long last = rlk_fx_now_ns();

    while (!atomic_load(&s->stop)) {
        struct timespec ts = {0, 2000000};
        long long now, gap;

        nanosleep(&ts, NULL);
        now = rlk_fx_now_ns();
        gap = now - last;
        last = now;
        if (gap > atomic_load(&s->max_gap_ns))
            atomic_store(&s->max_gap_ns, gap);
    }
    return NULL;
}

void tk_stall_start(tk_stall *s)
{
    atomic_store(&s->stop, 0);
    atomic_store(&s->max_gap_ns, 0);
    pthread_create(&s->thread, NULL, tk_stall_main, s);
}

void tk_stall_reset(tk_stall *s)
{
    atomic_store(&s->max_gap_ns, 0);
}

long long tk_stall_max_gap_ms(tk_stall *s)
{
    return atomic_load(&s->max_gap_ns) / 1000000LL;
}

void tk_stall_stop(tk_stall *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
}

static void *tk_srv_stall_main(void *arg)
{
    tk_srv_stall *p = arg;
    struct timeval tv = {5, 0};
    redisContext *c = NULL;
    long long since = 0;    /* send time of the first probe not answered yet (0: none) */

    while (!atomic_load(&p->stop)) {
        struct timespec ts = {0, 2000000};
        redisReply *r = NULL;
        long long t0 = rlk_fx_now_ns(), rtt;

        if (!c || c->err) {
            if (c)
                redisFree(c);
            c = p->ctl_path[0] ? redisConnectUnixWithTimeout(p->ctl_path, tv)
                               : redisConnectWithTimeout("127.0.0.1", p->port, tv);
            if (c && !c->err)
                redisSetTimeout(c, tv);
        }
        if (c && !c->err)
            r = redisCommand(c, "PING");
        if (!since)
            since = t0;
        if (r) {
            rtt = rlk_fx_now_ns() - since;
            if (rtt > atomic_load(&p->max_rtt_ns))
                atomic_store(&p->max_rtt_ns, rtt);
            since = 0;
            freeReplyObject(r);
        }
        nanosleep(&ts, NULL);
    }
    if (c)
        redisFree(c);
    return NULL;
}

int tk_srv_stall_start(tk_srv_stall *p, const rlk_fx_server *srv)
{
    atomic_store(&p->stop, 0);
    atomic_store(&p->max_rtt_ns, 0);
    p->port = srv->port;
    snprintf(p->ctl_path, sizeof p->ctl_path, "%s", srv->ctl_path);
    return pthread_create(&p->thread, NULL, tk_srv_stall_main, p) == 0 ? 0 : -1;
}

void tk_srv_stall_reset(tk_srv_stall *p)
{
    atomic_store(&p->max_rtt_ns, 0);
}

long long tk_srv_stall_max_ms(tk_srv_stall *p)
{
    return atomic_load(&p->max_rtt_ns) / 1000000LL;
}

void tk_srv_stall_stop(tk_srv_stall *p)
{
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
}

/* ---------------------------------------------------------------- latch */

void tk_latch_init(tk_latch *l)
{
    pthread_condattr_t a;

    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &a);
    pthread_condattr_destroy(&a);
    l->count = 0;
}

void tk_latch_destroy(tk_latch *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}

void tk_latch_add(tk_latch *l, int n)
{
    pthread_mutex_lock(&l->mu);
    l->count += n;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

int tk_latch_wait(tk_latch *l, int target, long long timeout_ms)
{
    long long until = rlk_fx_now_ns() + timeout_ms * 1000000LL;
    struct timespec ts = {(time_t)(until / 1000000000LL), (long)(until % 1000000000LL)};
    int n;

    pthread_mutex_lock(&l->mu);
    while (l->count < target && pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT) {
    }
    n = l->count;
    pthread_mutex_unlock(&l->mu);
    return n;
}

int tk_latch_get(tk_latch *l)
{
    int n;

    pthread_mutex_lock(&l->mu);
    n = l->count;
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* ---------------------------------------------------------------- lost reports */

void tk_lost_init(tk_lost_rec *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    tk_latch_init(&g->fired);
}

void tk_lost_destroy(tk_lost_rec *g)
{
    tk_latch_destroy(&g->fired);
    pthread_mutex_destroy(&g->mu);
}

void tk_on_lost_kind(int kind, const char *name, const char *owner, int reason, void *ud)
{
    tk_lost_rec *g = ud;

    pthread_mutex_lock(&g->mu);
    g->kind = kind;
    g->reason = reason;
    g->at_ns = rlk_fx_now_ns();
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->owner, sizeof g->owner, "%s", owner);
    pthread_mutex_unlock(&g->mu);
    tk_latch_add(&g->fired, 1);
}

void tk_on_lost(const char *name, const char *owner, int reason, void *ud)
{
    tk_on_lost_kind(-1, name, owner, reason, ud);
}

static void tk_on_lost_plain(const char *name, const char *owner, int reason, void *ud)
{
    tk_lost_rec *g = ud;

    (void)name;
    (void)owner;
    (void)reason;
    pthread_mutex_lock(&g->mu);
    g->plain_count++;
    pthread_mutex_unlock(&g->mu);
}

void tk_lost_install(rlk_client *c, tk_lost_rec *g)
{
    rlk_set_lost_callback(c, tk_on_lost_plain, g);
    rlk_set_lost_kind_callback(c, tk_on_lost_kind, g);
}

long long tk_lost_ms_after(tk_lost_rec *g, long long t0_ns, long long timeout_ms)
{
    long long at;

    if (tk_latch_wait(&g->fired, 1, timeout_ms) < 1)
        return -1;
    pthread_mutex_lock(&g->mu);
    at = g->at_ns;
    pthread_mutex_unlock(&g->mu);
    return (at - t0_ns) / 1000000;
}

/* ---------------------------------------------------------------- a lock waiter */

static void *tk_waiter_main(void *arg)
{
    tk_waiter *w = arg;

    tk_latch_add(&w->started, 1);
    w->rc = rlk_lock_try_lock(w->lock, w->wait_ms, 0);
    w->acquired_ns = rlk_fx_now_ns();
    return NULL;
}

int tk_waiter_start(tk_waiter *w, rlk_lock *lock, long long wait_ms)
{
    memset(w, 0, sizeof *w);
    w->lock = lock;
    w->wait_ms = wait_ms;
    tk_latch_init(&w->started);
    if (pthread_create(&w->thread, NULL, tk_waiter_main, w) != 0) {
        tk_latch_destroy(&w->started);
        return -1;
    }
    return tk_latch_wait(&w->started, 1, 5000) >= 1 ? 0 : -1;
}

void tk_waiter_join(tk_waiter *w)
{
    pthread_join(w->thread, NULL);
    tk_latch_destroy(&w->started);
}

int tk_client_port(rlk_client *c)
{
    char buf[300];
    const char *colon;

    rlk_client_server(c, buf, sizeof buf, NULL);
    colon = strrchr(buf, ':');
    return colon ? atoi(colon + 1) : -1;
}

int tk_wait_client_port(rlk_client *c, int port, long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms();

    while (tk_client_port(c) != port) {
        if (rlk_fx_now_ms() - t0 > timeout_ms)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

/* ---------------------------------------------------------------- server probes */

long long tk_script_calls(const rlk_fx_server *s)
{
    static const char *const keys[] = {"cmdstat_eval:calls=", "cmdstat_evalsha:calls=",
                                       "cmdstat_fcall:calls=", "cmdstat_fcall_ro:calls="};
    redisReply *x = rlk_fx_command(s, "INFO commandstats");
    long long n = -1;

    if (x && x->type == REDIS_REPLY_STRING) {
        n = 0;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *at = strstr(x->str, keys[k]);

            if (at)
                n += atoll(at + strlen(keys[k]));
        }
    }
    if (x)
        freeReplyObject(x);
    return n;
}

/* The count of a PUBSUB NUMSUB reply r (freed), or -1. */
long long tk_numsub_reply(redisReply *r)
{
    long long n = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

long long tk_numsub(const rlk_fx_server *s, const char *channel)
{
    return tk_numsub_reply(rlk_fx_command(s, "PUBSUB NUMSUB %s", channel));
}

long long tk_numsub_ctx(redisContext *ctx, const char *channel)
{
    return tk_numsub_reply(ctx ? redisCommand(ctx, "PUBSUB NUMSUB %s", channel) : NULL);
}

long long tk_numsub_matching(const rlk_fx_server *s, const char *pattern)
{
    redisReply *r = rlk_fx_command(s, "PUBSUB CHANNELS %s", pattern);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_ARRAY) {
        n = 0;
        for (size_t i = 0; i < r->elements && n >= 0; i++) {
            long long k = r->element[i]->type == REDIS_REPLY_STRING
                              ? tk_numsub(s, r->element[i]->str) : -1;

            n = k < 0 ? -1 : n + k;
        }
    }
    if (r)
        freeReplyObject(r);
    return n;
}

int tk_wait_numsub(const rlk_fx_server *s, const char *channel, long long min, long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    while (tk_numsub(s, channel) < min) {
        if (rlk_fx_now_ms() >= until)
            return -1;
        rlk_fx_sleep_ms(2);     /* bounded poll of server state: there is no signal for it */
    }
    return 0;
}

int tk_wait_numsub_at_most(const rlk_fx_server *s, const char *channel, long long max,
                           long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;
    long long n;

    /* An UNSUBSCRIBE is asynchronous: the caller's thread may have returned before it landed. */
    while ((n = tk_numsub(s, channel)) > max || n < 0) {
        if (rlk_fx_now_ms() >= until)
            return -1;
        rlk_fx_sleep_ms(2);     /* bounded poll of server state: there is no signal for it */
    }
    return 0;
}

/* Calls fn(id, ctx) for every "id=N ... name=NAME ..." line of CLIENT LIST. */
static int tk_for_clients_named(const rlk_fx_server *s, const char *name,
                                void (*fn)(const rlk_fx_server *, long long))
{
    redisReply *r = rlk_fx_command(s, "CLIENT LIST");
    char needle[128];
    int n = 0;

    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    snprintf(needle, sizeof needle, " name=%s ", name);
    for (char *line = r->str; line && *line;) {
        char *end = strchr(line, '\n');

        if (end)
            *end = '\0';
        if (strstr(line, needle) && strncmp(line, "id=", 3) == 0) {
            if (fn)
                fn(s, atoll(line + 3));
            n++;
        }
        line = end ? end + 1 : NULL;
    }
    freeReplyObject(r);
    return n;
}

static void tk_kill_id(const rlk_fx_server *s, long long id)
{
    redisReply *r = rlk_fx_command(s, "CLIENT KILL ID %lld", id);

    if (r)
        freeReplyObject(r);
}

int tk_kill_clients_named(const rlk_fx_server *s, const char *name)
{
    return tk_for_clients_named(s, name, tk_kill_id);
}

int tk_count_clients_named(const rlk_fx_server *s, const char *name)
{
    return tk_for_clients_named(s, name, NULL);
}

int tk_key_exists(const rlk_fx_server *s, const char *key)
{
    redisReply *r = rlk_fx_command(s, "EXISTS %s", key);
    int n = -1;

    if (r && r->type == REDIS_REPLY_INTEGER)
        n = (int)r->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

long long tk_command_calls(const rlk_fx_server *s, const char *cmd)
{
    redisReply *r = rlk_fx_command(s, "INFO commandstats");
    char field[64];
    const char *at;
    long long n = -1;

    snprintf(field, sizeof field, "cmdstat_%s:calls=", cmd);
    if (r && r->type == REDIS_REPLY_STRING)
        n = (at = strstr(r->str, field)) ? atoll(at + strlen(field)) : 0;
    if (r)
        freeReplyObject(r);
    return n;
}

/* ---------------------------------------------------------------- child processes */

static void tk_child_exec(int in_fd, int out_fd, pid_t parent, const char *const *args)
{
    const char *argv[32];
    int n = 0;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(126);
    dup2(in_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    argv[n++] = "rlk_test_child";
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    execv("/proc/self/exe", (char *const *)argv);
    fprintf(stderr, "exec /proc/self/exe: %s\n", strerror(errno));
    _exit(127);
}

int tk_child_spawn(tk_child *ch, const char *const *args)
{
    int in[2], out[2];
    pid_t parent = getpid();

    memset(ch, 0, sizeof *ch);
    ch->pid = -1;
    ch->in_fd = ch->out_fd = -1;
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    ch->pid = fork();
    if (ch->pid == 0)
        tk_child_exec(in[0], out[1], parent, args);
    close(in[0]);
    close(out[1]);
    ch->in_fd = in[1];
    ch->out_fd = out[0];
    if (ch->pid < 0) {
        tk_child_kill(ch);
        return -1;
    }
    return 0;
}

static int tk_child_take_line(tk_child *ch, char *line, size_t len)
{
    char *nl = memchr(ch->buf, '\n', ch->len);
    size_t n;

    if (!nl)
        return -1;
    n = (size_t)(nl - ch->buf);
    snprintf(line, len, "%.*s", (int)n, ch->buf);
    memmove(ch->buf, nl + 1, ch->len - n - 1);
    ch->len -= n + 1;
    return 0;
}

int tk_child_read_line(tk_child *ch, char *line, size_t len, long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    while (tk_child_take_line(ch, line, len) != 0) {
        struct pollfd p = {ch->out_fd, POLLIN, 0};
        long long left = until - rlk_fx_now_ms();
        ssize_t got;

        if (left <= 0 || ch->len == sizeof ch->buf || ch->out_fd < 0)
            return -1;
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        got = read(ch->out_fd, ch->buf + ch->len, sizeof ch->buf - ch->len);
        if (got <= 0)
            return -1;
        ch->len += (size_t)got;
    }
    return 0;
}

int tk_child_send(tk_child *ch, const char *line)
{
    size_t len = strlen(line);

    if (write(ch->in_fd, line, len) != (ssize_t)len || write(ch->in_fd, "\n", 1) != 1)
        return -1;
    return 0;
}

int tk_child_stop(tk_child *ch)
{
    int st;

    return ch->pid > 0 && kill(ch->pid, SIGSTOP) == 0 &&
           waitpid(ch->pid, &st, WUNTRACED) == ch->pid && WIFSTOPPED(st);
}

int tk_child_wait(tk_child *ch, long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;
    int status;

    if (ch->pid <= 0)
        return -1;
    for (;;) {
        pid_t r = waitpid(ch->pid, &status, WNOHANG);

        if (r == ch->pid) {
            ch->pid = -1;
            tk_child_kill(ch);
            return status;
        }
        if (r < 0 || rlk_fx_now_ms() >= until)
            break;
        rlk_fx_sleep_ms(5);     /* bounded poll: waitpid has no timeout */
    }
    tk_child_kill(ch);
    return -1;
}

void tk_child_kill(tk_child *ch)
{
    if (ch->pid > 0) {
        kill(ch->pid, SIGKILL);
        waitpid(ch->pid, NULL, 0);
        ch->pid = -1;
    }
    if (ch->in_fd >= 0)
        close(ch->in_fd);
    if (ch->out_fd >= 0)
        close(ch->out_fd);
    ch->in_fd = ch->out_fd = -1;
}

void tk_say(const char *fmt, ...)
{
    va_list ap;

    flockfile(stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    funlockfile(stdout);
}

const char *tk_stall_note(tk_stall *s)
{
    return tk_stall_max_gap_ms(s) > TK_STALL_MS ? " - a scheduling stall, not a lock bug" : "";
}

long long tk_wall_offset_ms(void)
{
    struct timespec rt, mono;

    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return ((long long)rt.tv_sec - mono.tv_sec) * 1000LL + (rt.tv_nsec - mono.tv_nsec) / 1000000L;
}

/* A reply r (freed) as tk_int reads it: an integer, a string's number, nil for nil, -999 else. */
static long long tk_int_of(redisReply *r, long long nil)
{
    long long v = -999;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = nil;
    if (r)
        freeReplyObject(r);
    return v;
}

long long tk_int(const rlk_fx_server *s, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = rlk_fx_vcommand(s, fmt, ap);
    va_end(ap);
    return tk_int_of(r, -1);
}

long long tk_count(const rlk_fx_server *s, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = rlk_fx_vcommand(s, fmt, ap);
    va_end(ap);
    return tk_int_of(r, 0);
}

int tk_key_gone_within(const rlk_fx_server *s, const char *key, long long ms)
{
    long long end = rlk_fx_now_ms() + ms;

    while (tk_int(s, "EXISTS %s", key) != 0) {
        if (rlk_fx_now_ms() >= end)
            return 0;
        rlk_fx_sleep_ms(20);
    }
    return 1;
}

int tk_hash_one_field(const rlk_fx_server *s, const char *name, char *field, size_t len)
{
    redisReply *r = rlk_fx_command(s, "HKEYS %s", name);
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
             r->element[0]->type == REDIS_REPLY_STRING;

    if (ok)
        snprintf(field, len, "%s", r->element[0]->str);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

const char *tk_str(const rlk_fx_server *s, char *buf, size_t len, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = rlk_fx_vcommand(s, fmt, ap);
    va_end(ap);
    if (len > 0)
        buf[0] = '\0';
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS))
        snprintf(buf, len, "%s", r->str);
    if (r)
        freeReplyObject(r);
    return buf;
}

int tk_command_ok(const rlk_fx_server *s, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    r = rlk_fx_vcommand(s, fmt, ap);
    va_end(ap);
    rc = r && r->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (r)
        freeReplyObject(r);
    return rc;
}

long long tk_server_ms(const rlk_fx_server *s)
{
    redisReply *r = rlk_fx_command(s, "TIME");
    long long ms = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    if (r)
        freeReplyObject(r);
    return ms;
}

int tk_wait_int_at_least(const rlk_fx_server *s, long long want, long long timeout_ms,
                         const char *fmt, const char *arg)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (tk_int(s, fmt, arg) < want) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

void tk_spin_ns(long long ns)
{
    long long until = rlk_fx_now_ns() + ns;

    while (rlk_fx_now_ns() < until) {
    }
}

unsigned tk_rand(unsigned *state)
{
    unsigned x = *state ? *state : 2463534242u;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

/* ---------------------------------------------------------------- a program's server */

int tk_suite_start(const char *name, rlk_fx_server *srv, char *url, size_t len, tk_stall *stall)
{
    if (rlk_fx_start(srv, NULL) != 0 || rlk_fx_url(srv, -1, url, len) != 0) {
        fprintf(stderr, "%s: cannot start redis-server\n", name);
        return -1;
    }
    if (tk_functions_setup(srv, url, len) < 0) {
        fprintf(stderr, "%s: cannot set up functions mode ($RLK_TEST_FUNCTIONS)\n", name);
        return -1;
    }
    if (stall)
        tk_stall_start(stall);
    return 0;
}

void tk_suite_stop(rlk_fx_server *srv, tk_stall *stall)
{
    int fn_bad;

    if (stall)
        tk_stall_stop(stall);
    fn_bad = tk_functions_check(srv) != 0;
    rlk_fx_stop(srv);
    if (fn_bad)
        exit(1);
}

/* ---------------------------------------------------------------- children with threads */

int tk_child_go_threads(int threads, void *(*fn)(void *), void *ctx)
{
    tk_thread_arg args[64];
    pthread_t t[64];
    char line[32];
    int started = 0;

    if (threads < 0 || threads > 64)
        return -1;
    tk_say("ready");
    if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0)
        return -1;
    for (int i = 0; i < threads; i++) {
        args[i].ctx = ctx;
        args[i].idx = i;
        if (pthread_create(&t[i], NULL, fn, &args[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    return started == threads ? 0 : -1;
}

const char *tk_child_log(char *buf, size_t len, const char *dir, int p)
{
    snprintf(buf, len, "%s/log.%d", dir, p);
    return buf;
}

int tk_children_spawn(tk_child *kids, int n, const char *const *args, int log_arg,
                      const char *dir)
{
    const char *a[32];
    char log[300];
    int spawned = 0, argc = 0;

    while (args[argc] && argc < 31) {
        a[argc] = args[argc];
        argc++;
    }
    a[argc] = NULL;
    for (int p = 0; p < n; p++) {
        if (log_arg >= 0 && log_arg < argc)
            a[log_arg] = tk_child_log(log, sizeof log, dir, p);
        if (tk_child_spawn(&kids[p], a) != 0)
            break;
        spawned++;
    }
    return spawned;
}

int tk_children_spawn_contend(tk_child *kids, int n, const char *url, int threads, int iters,
                              const char *dir)
{
    char t[16], i[16];
    const char *args[] = {"contend", url, t, i, "", NULL};

    snprintf(t, sizeof t, "%d", threads);
    snprintf(i, sizeof i, "%d", iters);
    return tk_children_spawn(kids, n, args, 4, dir);
}

int tk_children_send(tk_child *kids, int n, const char *line)
{
    int sent = 0;

    for (int p = 0; p < n; p++)
        sent += tk_child_send(&kids[p], line) == 0;
    return sent;
}

size_t tk_children_take_logs(const char *dir, int n, tk_hold **holds, size_t *count, int *bad)
{
    size_t added = 0;

    for (int p = 0; p < n; p++) {
        char log[300];

        added += tk_holds_take(tk_child_log(log, sizeof log, dir, p), holds, count, bad);
    }
    return added;
}

/* ---------------------------------------------------------------- refused connections */

long long tk_ctx_int(redisContext *ctx, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    if (!ctx)
        return -999;
    va_start(ap, fmt);
    r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    return tk_int_of(r, -1);
}

/* A field of INFO section on ctx, or -1. */
static long long tk_ctx_info(redisContext *ctx, const char *section, const char *field)
{
    redisReply *r = redisCommand(ctx, "INFO %s", section);
    long long v = -1;
    size_t n = strlen(field);

    if (r && r->type == REDIS_REPLY_STRING) {
        for (const char *p = r->str; p && *p; p = strchr(p, '\n')) {
            if (*p == '\n')
                p++;
            if (strncmp(p, field, n) == 0 && p[n] == ':') {
                v = atoll(p + n + 1);
                break;
            }
        }
    }
    if (r)
        freeReplyObject(r);
    return v;
}

int tk_refuse_begin(tk_refuse *r, const rlk_fx_server *s)
{
    redisReply *rep;
    long long connected;

    r->maxclients = -1;
    r->ctl = rlk_fx_connect(s);
    if (!r->ctl)
        return -1;
    rep = redisCommand(r->ctl, "CONFIG GET maxclients");
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_STRING)
        r->maxclients = atoll(rep->element[1]->str);
    if (rep)
        freeReplyObject(rep);
    r->rejected0 = tk_ctx_info(r->ctl, "stats", "rejected_connections");
    connected = tk_ctx_info(r->ctl, "clients", "connected_clients");
    if (r->maxclients <= 0 || r->rejected0 < 0 || connected <= 0) {
        r->maxclients = -1;
        tk_refuse_end(r);
        return -1;
    }
    rep = redisCommand(r->ctl, "CONFIG SET maxclients %lld", connected);
    if (!rep || rep->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "  tk_refuse_begin: CONFIG SET maxclients %lld: %s\n", connected,
                rep ? rep->str : r->ctl->errstr);
        if (rep)
            freeReplyObject(rep);
        r->maxclients = -1;
        tk_refuse_end(r);
        return -1;
    }
    freeReplyObject(rep);
    return 0;
}

int tk_refuse_wait_rejected(tk_refuse *r, long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    while (r->ctl) {
        long long n = tk_ctx_info(r->ctl, "stats", "rejected_connections");

        if (n > r->rejected0)
            return 0;
        if (n < 0 || rlk_fx_now_ms() > until)
            return -1;
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return -1;
}

int tk_refuse_end(tk_refuse *r)
{
    int rc = 0;

    if (r->ctl && r->maxclients > 0) {
        redisReply *rep = redisCommand(r->ctl, "CONFIG SET maxclients %lld", r->maxclients);

        rc = rep && rep->type != REDIS_REPLY_ERROR ? 0 : -1;
        if (rep)
            freeReplyObject(rep);
    }
    r->maxclients = -1;
    if (r->ctl)
        redisFree(r->ctl);
    r->ctl = NULL;
    return rc;
}

long long tk_queue_find_cid(redisContext *ctx, const char *key, long long cid)
{
    redisReply *r = ctx ? redisCommand(ctx, "LRANGE %s 0 -1", key) : NULL;
    long long at = -2;

    if (r && r->type == REDIS_REPLY_ARRAY) {
        at = -1;
        for (size_t i = 0; i < r->elements; i++)
            if (r->element[i]->type == REDIS_REPLY_STRING &&
                atoll(r->element[i]->str) / 1024 == cid) {
                at = (long long)i;
                break;
            }
    }
    if (r)
        freeReplyObject(r);
    return at;
}

long long tk_wait_queued_subscribed(redisContext *ctx, const char *key, long long cid,
                                    const char *channel, long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms, at;

    while (((at = tk_queue_find_cid(ctx, key, cid)) < 0 || tk_numsub_ctx(ctx, channel) < 1) &&
           at != -2 && rlk_fx_now_ms() < until) {
        struct timespec ts = {0, 2 * 1000000L};

        nanosleep(&ts, NULL);
    }
    return at;
}

int tk_window_spawn(tk_child *kid, const char *const *args, long long cid_a, long long *cid_b)
{
    char line[128];

    if (tk_child_spawn(kid, args) != 0)
        return -1;
    if (tk_child_read_line(kid, line, sizeof line, 15000) != 0 || strncmp(line, "ready ", 6)) {
        fprintf(stderr, "  waiter B did not get ready\n");
        tk_child_kill(kid);
        return -1;
    }
    *cid_b = tk_uuid_cid(line + 6);
    if (*cid_b == cid_a) {
        printf("  A and B drew the same wake channel (1 in 32768): not this run\n");
        tk_child_kill(kid);
        return 1;
    }
    return 0;
}

long long tk_uuid_cid(const char *uuid)
{
    char hex[5] = {0};

    for (int i = 0; i < 4 && uuid[i]; i++)
        hex[i] = uuid[i];
    return 32768 + (strtol(hex, NULL, 16) & 32767);
}

/* ---------------------------------------------------------------- keys as they were */

void tk_make_key(const rlk_fx_server *srv, const char *const *words, size_t n, const char *key,
                 long long pexpire_ms)
{
    const char *argv[16];
    size_t lens[16];
    int argc = 0;
    redisContext *x = rlk_fx_connect(srv);
    redisReply *r;

    if (!x)
        return;
    for (; (size_t)argc < n && argc < 16 && words[argc]; argc++) {
        argv[argc] = strcmp(words[argc], "%s") == 0 ? key : words[argc];
        lens[argc] = strlen(argv[argc]);
    }
    r = redisCommandArgv(x, argc, argv, lens);
    if (r)
        freeReplyObject(r);
    if (pexpire_ms > 0 && (r = redisCommand(x, "PEXPIRE %s %lld", key, pexpire_ms)))
        freeReplyObject(r);
    redisFree(x);
}

char *tk_dump(const rlk_fx_server *srv, const char *key, size_t *len, long long *pttl)
{
    redisReply *r = rlk_fx_command(srv, "DUMP %s", key);
    char *out = NULL;

    *len = 0;
    if (r && r->type == REDIS_REPLY_STRING && (out = malloc(r->len + 1))) {
        memcpy(out, r->str, r->len);
        *len = r->len;
    }
    if (r)
        freeReplyObject(r);
    r = rlk_fx_command(srv, "PTTL %s", key);
    *pttl = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
    if (r)
        freeReplyObject(r);
    return out;
}

void tk_ares_cb(rlk_async *ac, const rlk_async_result *r, void *p)
{
    tk_ares *x = p;

    (void)ac;
    x->done = 1;
    x->err = r->err;
    x->value = r->value;
    snprintf(x->errstr, sizeof x->errstr, "%s", r->errstr ? r->errstr : "");
}

int tk_ares_run(rlk_async_poll *p, tk_ares *x, long long ms)
{
    long long end = rlk_fx_now_ms() + ms;

    while (!x->done && rlk_fx_now_ms() < end)
        rlk_async_poll_turn(p, 50 * 1000000LL);
    return x->done;
}

int tk_ares_call(rlk_async_poll *p, rlk_async_req *req, tk_ares *x)
{
    return req && tk_ares_run(p, x, 20000) ? x->err : -1000;
}
