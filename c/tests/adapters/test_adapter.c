/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_adapter: one adapter header (rlk_async_libevent.h, _libuv.h or
 * _libev.h, chosen by RLK_TEST_LOOP_*) on its real loop, with no server and
 * no rlk engine: this program defines rlk_async_attach, rlk_async_handle_io
 * and rlk_async_handle_timer itself, keeps the hooks the adapter hands over
 * and calls them as the engine would. It shows that the adapter
 *   - refuses NULL arguments and a second attach, and frees what it made then;
 *   - fires the one timer once, never before the time asked (less the
 *     loop's clock granularity: early_slack_ns), on the next turn for 0,
 *     not at all after -1, once when re-armed before it fired;
 *   - delivers read events of a socketpair fd while READ is watched, none
 *     while 0 is, write events for WRITE, and nothing after a detach made
 *     from inside the io callback;
 *   - leaves nothing behind after detach + cleanup: the loop has no event
 *     or handle of the adapter left (libevent's count of added events,
 *     uv_loop_close succeeding, ev_run having no active watcher) and the
 *     heap is back to its size before attach (mallinfo2; under ASan,
 *     LeakSanitizer checks the same at exit).
 * Waits are bounded polls of the loop; timing is asserted only as "not
 * before" (a stall can only make things later).
 */
#include "check.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if defined(RLK_TEST_LOOP_LIBEVENT)
#include "rlk_async_libevent.h"
#define LOOP_NAME "libevent"
#elif defined(RLK_TEST_LOOP_LIBUV)
#include "rlk_async_libuv.h"
#define LOOP_NAME "libuv"
#elif defined(RLK_TEST_LOOP_LIBEV)
#include "rlk_async_libev.h"
#define LOOP_NAME "libev"
#else
#error "define RLK_TEST_LOOP_LIBEVENT, RLK_TEST_LOOP_LIBUV or RLK_TEST_LOOP_LIBEV"
#endif

/* ---------------------------------------------------------------- the engine's stand-in */

static struct {
    rlk_async *ac;            /* the client the hooks were given for */
    rlk_async_hooks hooks;
    int attached;
    int timer_calls;
    int64_t timer_at_ns;      /* when handle_timer was last called */
    int io_calls;
    int io_fd;
    int io_events;            /* union of the events delivered */
    int io_read_byte;         /* on READ: read one byte from io_fd */
    int io_bytes_read;        /* ... bytes it read */
    int io_read_failed;       /* ... reads that did not return the one byte */
    void *io_detach;          /* on the next io: detach this handle from inside */
    int io_wrong_ac;
} eng;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int rlk_async_attach(rlk_async *ac, const rlk_async_hooks *hooks)
{
    if (hooks == NULL || hooks->attach == NULL || hooks->watch == NULL ||
        hooks->detach == NULL || hooks->set_timer == NULL || hooks->cleanup == NULL)
        return RLK_ERR_ARG;
    if (eng.attached)
        return RLK_ERR_ARG;
    eng.ac = ac;
    eng.hooks = *hooks;
    eng.attached = 1;
    return RLK_OK;
}

void rlk_async_handle_io(rlk_async *ac, int fd, int events)
{
    char c;

    if (ac != eng.ac)
        eng.io_wrong_ac++;
    eng.io_calls++;
    eng.io_fd = fd;
    eng.io_events |= events;
    if ((events & RLK_ASYNC_READ) && eng.io_read_byte) {
        if (read(fd, &c, 1) == 1)
            eng.io_bytes_read++;
        else
            eng.io_read_failed++;
    }
    if (eng.io_detach != NULL) {
        eng.hooks.detach(eng.hooks.data, eng.io_detach);
        eng.io_detach = NULL;
    }
}

void rlk_async_handle_timer(rlk_async *ac)
{
    if (ac != eng.ac)
        eng.io_wrong_ac++;
    eng.timer_calls++;
    eng.timer_at_ns = now_ns();
}

/* ---------------------------------------------------------------- the loop, per library */

/* A test-owned tick every 5 ms keeps each "run once" short, so that every
 * wait below is a bounded poll. */
#if defined(RLK_TEST_LOOP_LIBEVENT)
static struct event_base *base;
static struct event *tick;
static void tick_cb(evutil_socket_t fd, short what, void *arg) { (void)fd; (void)what; (void)arg; }
static void loop_new(void)
{
    struct timeval tv = {0, 5000};

    base = event_base_new();
    tick = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
    event_add(tick, &tv);
}
static void loop_once(void) { event_base_loop(base, EVLOOP_ONCE); }
static void loop_settle(void) { event_base_loop(base, EVLOOP_NONBLOCK); }
static int loop_attach(rlk_async *ac) { return rlk_async_libevent_attach(ac, base); }
static int loop_attach_null(rlk_async *ac) { return rlk_async_libevent_attach(ac, NULL); }
/* 1 when the loop holds nothing of the adapter (only the tick). */
static int loop_empty_but_tick(void)
{
    return event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED) == 1;
}
static int loop_free(void)
{
    event_free(tick);
    event_base_free(base);
    return 1;
}
#elif defined(RLK_TEST_LOOP_LIBUV)
static uv_loop_t loop;
static uv_timer_t tick;
static void tick_cb(uv_timer_t *t) { (void)t; }
static void loop_new(void)
{
    uv_loop_init(&loop);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, tick_cb, 5, 5);
}
static void loop_once(void) { uv_run(&loop, UV_RUN_ONCE); }
static void loop_settle(void) { uv_run(&loop, UV_RUN_NOWAIT); }
static int loop_attach(rlk_async *ac) { return rlk_async_libuv_attach(ac, &loop); }
static int loop_attach_null(rlk_async *ac) { return rlk_async_libuv_attach(ac, NULL); }
static void count_handle(uv_handle_t *h, void *arg) { (void)h; (*(int *)arg)++; }
static int loop_empty_but_tick(void)
{
    int n = 0;

    uv_run(&loop, UV_RUN_NOWAIT); /* close callbacks run here */
    uv_walk(&loop, count_handle, &n);
    return n == 1;
}
static int loop_free(void)
{
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return uv_loop_close(&loop) == 0; /* UV_EBUSY: a handle was left open */
}
#else
static struct ev_loop *loop;
static ev_timer tick;
static void tick_cb(struct ev_loop *l, ev_timer *w, int r) { (void)l; (void)w; (void)r; }
static void loop_new(void)
{
    loop = ev_loop_new(EVFLAG_AUTO);
    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    ev_timer_start(loop, &tick);
}
static void loop_once(void) { ev_run(loop, EVRUN_ONCE); }
static void loop_settle(void) { ev_run(loop, EVRUN_NOWAIT); }
static int loop_attach(rlk_async *ac) { return rlk_async_libev_attach(ac, loop); }
static int loop_attach_null(rlk_async *ac) { return rlk_async_libev_attach(ac, NULL); }
static int loop_empty_but_tick(void)
{
    int left;

    ev_timer_stop(loop, &tick);
    left = ev_run(loop, EVRUN_NOWAIT); /* nonzero: an active watcher is left */
    ev_timer_start(loop, &tick);
    return left == 0;
}
static int loop_free(void)
{
    ev_timer_stop(loop, &tick);
    ev_loop_destroy(loop);
    return 1;
}
#endif

/* How early a timer may fire against CLOCK_MONOTONIC: libevent times its
 * timers with CLOCK_MONOTONIC_COARSE unless the base was made with
 * EVENT_BASE_FLAG_PRECISE_TIMER (one kernel tick, 1-10 ms); libuv counts
 * whole milliseconds. rlk checks its deadlines against its own clock. */
static int64_t early_slack_ns(void)
{
#if defined(RLK_TEST_LOOP_LIBEVENT)
    struct timespec res;

    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
        return (int64_t)res.tv_sec * 1000000000 + res.tv_nsec + 1000000;
#endif
    return 1000000;
}

/* Turns the loop until *flag changes from its value now or max_ms pass
 * (a generous bound: the machine stalls). Returns 1 when it changed. */
static int run_until_changes(const int *flag, int max_ms)
{
    int start = *flag;
    int64_t end = now_ns() + (int64_t)max_ms * 1000000;

    while (*flag == start && now_ns() < end)
        loop_once();
    return *flag != start;
}

/* Turns the loop for at least ms. */
static void run_for(int ms)
{
    int64_t end = now_ns() + (int64_t)ms * 1000000;

    while (now_ns() < end)
        loop_once();
}

static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}

static int fake_client;
#define AC ((rlk_async *)&fake_client)

static void reset_engine(void)
{
    memset(&eng, 0, sizeof eng);
}

/* ---------------------------------------------------------------- tests */

static void test_attach_rules(void)
{
    size_t before;

    reset_engine();
    loop_new();
    CHECK_INT_EQ(loop_attach_null(AC), RLK_ERR_ARG);
    CHECK_INT_EQ(loop_attach(NULL), RLK_ERR_ARG);
    CHECK(!eng.attached);
    run_for(20); /* the loop's own tables grow on its first turns: not the adapter's */
    before = heap_in_use();
    REQUIRE_INT_EQ(loop_attach(AC), RLK_OK);
    CHECK(eng.attached);
    CHECK(eng.ac == AC);
    CHECK(eng.hooks.data != NULL);
    /* A second attach is refused by rlk_async_attach; the adapter frees what it made. */
    {
        size_t mid = heap_in_use();

        CHECK_INT_EQ(loop_attach(AC), RLK_ERR_ARG);
        loop_settle(); /* libuv: the refused attach's close callback runs here */
        CHECKF(heap_in_use() == mid, "refused attach left %zu bytes",
               heap_in_use() - mid);
    }
    eng.hooks.cleanup(eng.hooks.data);
    CHECK(loop_empty_but_tick());
    CHECKF(heap_in_use() == before, "cleanup left %zd bytes", (ssize_t)(heap_in_use() - before));
    CHECK(loop_free());
}

static void test_timer(void)
{
    int64_t t0;

    reset_engine();
    loop_new();
    REQUIRE_INT_EQ(loop_attach(AC), RLK_OK);

    /* Fires once, not before the time asked. */
    t0 = now_ns();
    eng.hooks.set_timer(eng.hooks.data, 30);
    REQUIREF(run_until_changes(&eng.timer_calls, 10000), "a 30 ms timer did not fire within 10 s");
    CHECKF(eng.timer_at_ns - t0 >= 30 * 1000000LL - early_slack_ns(),
           "fired after %lld us, asked 30 ms", (long long)((eng.timer_at_ns - t0) / 1000));
    run_for(60);
    CHECK_INT_EQ(eng.timer_calls, 1);

    /* 0: on the next turn. */
    eng.timer_calls = 0;
    eng.hooks.set_timer(eng.hooks.data, 0);
    CHECK(run_until_changes(&eng.timer_calls, 10000));
    CHECK_INT_EQ(eng.timer_calls, 1);

    /* -1 stops it. */
    eng.timer_calls = 0;
    eng.hooks.set_timer(eng.hooks.data, 10);
    eng.hooks.set_timer(eng.hooks.data, -1);
    run_for(80);
    CHECK_INT_EQ(eng.timer_calls, 0);

    /* A new request replaces the earlier one: armed long, then short, fires once. */
    eng.hooks.set_timer(eng.hooks.data, 60000);
    t0 = now_ns();
    eng.hooks.set_timer(eng.hooks.data, 20);
    CHECK(run_until_changes(&eng.timer_calls, 10000));
    CHECKF(eng.timer_at_ns - t0 >= 20 * 1000000LL - early_slack_ns(),
           "fired after %lld us, asked 20 ms", (long long)((eng.timer_at_ns - t0) / 1000));
    /* ... and short, then long: does not fire at the short time. */
    eng.timer_calls = 0;
    eng.hooks.set_timer(eng.hooks.data, 10);
    eng.hooks.set_timer(eng.hooks.data, 60000);
    run_for(80);
    CHECK_INT_EQ(eng.timer_calls, 0);
    eng.hooks.set_timer(eng.hooks.data, -1);

    /* Re-armed from inside its own callback is the engine's normal case: set
     * again after firing, fires again. */
    eng.hooks.set_timer(eng.hooks.data, 5);
    CHECK(run_until_changes(&eng.timer_calls, 10000));
    eng.hooks.set_timer(eng.hooks.data, 5);
    CHECK(run_until_changes(&eng.timer_calls, 10000));
    CHECK_INT_EQ(eng.timer_calls, 2);
    CHECK_INT_EQ(eng.io_wrong_ac, 0);

    eng.hooks.set_timer(eng.hooks.data, 1000); /* cleanup with the timer armed */
    eng.hooks.cleanup(eng.hooks.data);
    CHECK(loop_empty_but_tick());
    CHECK(loop_free());
}

static void test_watch(void)
{
    int sv[2];
    void *h;

    reset_engine();
    loop_new();
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE_INT_EQ(loop_attach(AC), RLK_OK);
    h = eng.hooks.attach(eng.hooks.data, sv[0]);
    REQUIRE(h != NULL);
    eng.io_read_byte = 1;

    /* Attached, nothing watched: a byte waiting brings no event. */
    REQUIRE(write(sv[1], "a", 1) == 1);
    run_for(50);
    CHECK_INT_EQ(eng.io_calls, 0);

    /* READ: delivered (the stand-in reads the byte). */
    eng.hooks.watch(eng.hooks.data, h, RLK_ASYNC_READ);
    CHECK(run_until_changes(&eng.io_calls, 10000));
    CHECK_INT_EQ(eng.io_fd, sv[0]);
    CHECK_INT_EQ(eng.io_events, RLK_ASYNC_READ);

    /* Still READ, nothing to read: no event. Another byte: one more. */
    eng.io_calls = 0;
    eng.io_events = 0;
    run_for(50);
    CHECK_INT_EQ(eng.io_calls, 0);
    REQUIRE(write(sv[1], "b", 1) == 1);
    CHECK(run_until_changes(&eng.io_calls, 10000));
    CHECK_INT_EQ(eng.io_events, RLK_ASYNC_READ);

    /* Unwatched (0): a byte waiting brings no event; watched again: it does. */
    eng.hooks.watch(eng.hooks.data, h, 0);
    eng.io_calls = 0;
    eng.io_events = 0;
    REQUIRE(write(sv[1], "c", 1) == 1);
    run_for(50);
    CHECK_INT_EQ(eng.io_calls, 0);
    eng.hooks.watch(eng.hooks.data, h, RLK_ASYNC_READ);
    CHECK(run_until_changes(&eng.io_calls, 10000));
    CHECK_INT_EQ(eng.io_events, RLK_ASYNC_READ);
    /* Each READ event found its byte: "a", "b" and "c" read, no read failed. */
    CHECK_INT_EQ(eng.io_bytes_read, 3);
    CHECK_INT_EQ(eng.io_read_failed, 0);

    /* WRITE: the socket is writable; READ | WRITE with a byte waiting: both. */
    eng.io_events = 0;
    eng.hooks.watch(eng.hooks.data, h, RLK_ASYNC_WRITE);
    CHECK(run_until_changes(&eng.io_calls, 10000));
    CHECK_INT_EQ(eng.io_events, RLK_ASYNC_WRITE);
    eng.io_read_byte = 0;
    eng.io_events = 0;
    REQUIRE(write(sv[1], "d", 1) == 1);
    eng.hooks.watch(eng.hooks.data, h, RLK_ASYNC_READ | RLK_ASYNC_WRITE);
    {
        int64_t end = now_ns() + 10000 * 1000000LL;

        while (eng.io_events != (RLK_ASYNC_READ | RLK_ASYNC_WRITE) && now_ns() < end)
            loop_once();
    }
    CHECK_INT_EQ(eng.io_events, RLK_ASYNC_READ | RLK_ASYNC_WRITE);

    /* Detached from inside its own callback: nothing more is delivered
     * (the byte is still there, the socket still writable). */
    eng.io_detach = h;
    eng.io_calls = 0;
    CHECK(run_until_changes(&eng.io_calls, 10000));
    CHECK(eng.io_detach == NULL);
    eng.io_calls = 0;
    run_for(50);
    CHECK_INT_EQ(eng.io_calls, 0);

    /* A second fd attached and detached without ever being watched. */
    h = eng.hooks.attach(eng.hooks.data, sv[1]);
    REQUIRE(h != NULL);
    eng.hooks.detach(eng.hooks.data, h);
    CHECK_INT_EQ(eng.io_wrong_ac, 0);

    eng.hooks.cleanup(eng.hooks.data);
    CHECK(loop_empty_but_tick());
    close(sv[0]);
    close(sv[1]);
    CHECK(loop_free());
}

/* The engine detaches every fd and then calls cleanup; with several fds
 * watched and the timer armed, nothing is left. The cycle runs twice and
 * the heap is compared on the second: the loops keep per-fd tables they
 * grow on first use and keep until the loop is freed. */
enum { MANY = 16 };

static void cleanup_cycle(int sv[MANY][2], int check_heap)
{
    void *h[MANY];
    size_t before = heap_in_use();

    reset_engine();
    REQUIRE_INT_EQ(loop_attach(AC), RLK_OK);
    for (int i = 0; i < MANY; i++) {
        h[i] = eng.hooks.attach(eng.hooks.data, sv[i][0]);
        REQUIRE(h[i] != NULL);
        /* READ, WRITE, READ | WRITE in turn */
        eng.hooks.watch(eng.hooks.data, h[i], (i % 3) + 1);
    }
    eng.hooks.set_timer(eng.hooks.data, 5000);
    CHECK(run_until_changes(&eng.io_calls, 10000)); /* the WRITE watchers fire */
    for (int i = 0; i < MANY; i++)
        eng.hooks.detach(eng.hooks.data, h[i]);
    eng.hooks.cleanup(eng.hooks.data);
    CHECK(loop_empty_but_tick());
    if (check_heap)
        CHECKF(heap_in_use() == before, "%d fds: detach + cleanup left %zd bytes", MANY,
               (ssize_t)(heap_in_use() - before));
}

static void test_cleanup_many(void)
{
    int sv[MANY][2];

    loop_new();
    for (int i = 0; i < MANY; i++)
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) == 0);
    cleanup_cycle(sv, 0);
    cleanup_cycle(sv, 1);
    for (int i = 0; i < MANY; i++) {
        close(sv[i][0]);
        close(sv[i][1]);
    }
    CHECK(loop_free());
}

int main(int argc, char **argv)
{
    /* Freed chunks kept in glibc's per-thread cache count as in use in
     * mallinfo2: run with the cache off (re-executed once with the tunable). */
    const char *tun = getenv("GLIBC_TUNABLES");

    (void)argc;
    if (tun == NULL || strstr(tun, "glibc.malloc.tcache_count=0") == NULL) {
        setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "test_adapter: re-exec with the tcache off failed: %s\n", strerror(errno));
        return 1;
    }
    RUN_TEST(test_attach_rules);
    RUN_TEST(test_timer);
    RUN_TEST(test_watch);
    RUN_TEST(test_cleanup_many);
    return check_summary("test_adapter_" LOOP_NAME);
}
