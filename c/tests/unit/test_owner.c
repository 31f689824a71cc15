/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Holder ids "<uuid>:<thread id>" (runtime/rt.h rlk_rt_thread_owner): the
 * same in one thread, another in another thread, and another in a forked
 * child than in the thread that forked it (the thread id is kept per
 * thread, and forgotten in a fork's child). And the async client's
 * "<uuid>:<task>" (engine/engine.h rlk_ae_owner), as snprintf writes it,
 * cut short to the buffer as snprintf cuts it.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h"
#include "rlk_async.h"
#include "runtime/rt.h"

static rlk_rt owner_rt;

static void *owner_thread(void *arg)
{
    (void)rlk_rt_thread_owner(&owner_rt, arg, 128);
    return NULL;
}

static void test_owner_per_thread(void)
{
    char a[128], b[128], t[128] = "", want[128], shortbuf[8];
    pthread_t th;

    snprintf(owner_rt.uuid, sizeof owner_rt.uuid, "0123456789abcdef0123456789abcdef");
    CHECK_INT_EQ(rlk_rt_thread_owner(&owner_rt, a, sizeof a), RLK_OK);
    CHECK_INT_EQ(rlk_rt_thread_owner(&owner_rt, b, sizeof b), RLK_OK);
    snprintf(want, sizeof want, "%s:%ld", owner_rt.uuid, (long)syscall(SYS_gettid));
    CHECK_STR_EQ(a, want);
    CHECK_STR_EQ(b, want);
    CHECK_INT_EQ(rlk_rt_thread_owner(&owner_rt, shortbuf, sizeof shortbuf), RLK_ERR_ARG);
    CHECK_STR_EQ(shortbuf, "0123456");
    CHECK_INT_EQ(pthread_create(&th, NULL, owner_thread, t), 0);
    CHECK_INT_EQ(pthread_join(th, NULL), 0);
    CHECK_STR_PREFIX(t, "0123456789abcdef0123456789abcdef:");
    CHECK_INT_EQ(strcmp(t, a) != 0, 1);
}

/* The child's id is its own thread's, not the one its parent's thread kept. */
static void test_owner_after_fork(void)
{
    char parent[128];
    int status = -1;
    pid_t pid;

    CHECK_INT_EQ(rlk_rt_thread_owner(&owner_rt, parent, sizeof parent), RLK_OK);
    pid = fork();
    if (pid == 0) {
        char child[128], want[128];

        snprintf(want, sizeof want, "%s:%ld", owner_rt.uuid, (long)syscall(SYS_gettid));
        _exit(rlk_rt_thread_owner(&owner_rt, child, sizeof child) == RLK_OK &&
              strcmp(child, want) == 0 && strcmp(child, parent) != 0 ? 0 : 1);
    }
    CHECK_INT_EQ(pid > 0, 1);
    CHECK_INT_EQ(waitpid(pid, &status, 0), pid);
    CHECK_INT_EQ(WIFEXITED(status) && WEXITSTATUS(status) == 0, 1);
}

/* Every digit count of a task, and buffers too short for the id. */
static void test_async_owner(void)
{
    static const unsigned long long tasks[] = {0, 1, 9, 10, 99, 100, 12345, 4294967296ULL,
                                               18446744073709551615ULL};
    static const size_t lens[] = {1, 2, 8, 37, 38, 40, 57, 58, 128};
    rlk_options o;
    rlk_async *ac;

    rlk_options_init(&o);
    o.url = "redis://127.0.0.1:1";      /* never attached: no connection is made */
    ac = rlk_async_new(&o);
    REQUIRE(ac != NULL);
    CHECK_INT_EQ((int)strlen(rlk_async_uuid(ac)), 36);
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++)
        for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
            char got[128], want[128];

            memset(got, '#', sizeof got);
            snprintf(want, lens[j], "%s:%llu", rlk_async_uuid(ac), tasks[i]);
            rlk_ae_owner(ac, tasks[i], got, lens[j]);
            CHECK_STR_EQ(got, want);
            CHECK(lens[j] == sizeof got || got[lens[j]] == '#');
        }
    rlk_async_free(ac);
}

int main(void)
{
    RUN_TEST(test_owner_per_thread);
    RUN_TEST(test_owner_after_fork);
    RUN_TEST(test_async_owner);
    return check_summary("test_owner");
}
