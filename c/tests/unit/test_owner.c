/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Holder ids "<uuid>:<thread id>" (runtime/rt.h rlk_rt_thread_owner): the
 * same in one thread, another in another thread, and another in a forked
 * child than in the thread that forked it (the thread id is kept per
 * thread, and forgotten in a fork's child).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
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

int main(void)
{
    RUN_TEST(test_owner_per_thread);
    RUN_TEST(test_owner_after_fork);
    return check_summary("test_owner");
}
