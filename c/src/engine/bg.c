/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.c - the blocking API's background loop (bg.h). The thread waits in
 * rlk_async_poll_turn on the engine client's connections and timer and on a
 * pipe that rlk_bg_post writes to (the engine ignores a file descriptor
 * that is not its own: the turn just ends), then runs the queued
 * operations.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlk_async_poll.h"
#include "client/error.h"
#include "engine/engine.h"
#include "engine/bg.h"
#include "engine/thread.h"

struct rlk_bg {
    rlk_client *c;
    const char *name;
    rlk_rt_counters *counters;
    pthread_mutex_t mu;             /* guards the queue, started and stop */
    rlk_bg_op *head, *tail;
    int started;
    int stop;
    int kick[2];                    /* written by rlk_bg_post, read by the loop */
    pthread_t thread;
    rlk_async *ac;                  /* the loop's (made with the thread) */
    rlk_async_poll p;
};

rlk_bg *rlk_bg_new(rlk_client *c, const char *name, rlk_rt_counters *counters)
{
    rlk_bg *b = calloc(1, sizeof *b);

    if (!b)
        return NULL;
    b->c = c;
    b->name = name;
    b->counters = counters;
    b->kick[0] = b->kick[1] = -1;
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

static void *rlk_bg_main(void *arg)
{
    rlk_bg *b = arg;
    rlk_bg_op *op;
    char buf[64];

    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        if ((op = b->head)) {
            if (!(b->head = op->next))
                b->tail = NULL;
            op->queued = 0;         /* posted again while it runs: it runs again */
        }
        pthread_mutex_unlock(&b->mu);
        if (op) {
            op->fn(b->ac, op->arg);
        } else {
            (void)rlk_async_poll_turn(&b->p, -1);
            while (read(b->kick[0], buf, sizeof buf) > 0) {
            }
        }
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* What the thread's start made (b->mu held, no thread). */
static void rlk_bg_clear(rlk_bg *b)
{
    if (rlk_ae_close_begin(b->ac) == 0)
        rlk_ae_close_end(b->ac);
    b->ac = NULL;
    rlk_async_poll_free(&b->p);
    if (b->kick[0] >= 0) {
        close(b->kick[0]);
        close(b->kick[1]);
    }
    b->kick[0] = b->kick[1] = -1;
}

/* The pipe, the engine client attached to the loop, then the thread (b->mu held). */
static int rlk_bg_start(rlk_bg *b)
{
    void *kick = NULL;

    if (pipe2(b->kick, O_NONBLOCK | O_CLOEXEC) != 0) {
        b->kick[0] = b->kick[1] = -1;
        return rlk_set_error(b->c, RLK_ERR_IO, "lock runtime: no pipe for the background thread: %s",
                             strerror(errno));
    }
    if ((b->ac = rlk_ae_new(b->c, b->counters, 1)))
        rlk_ae_sub_name(b->ac, b->name);
    if (b->ac && rlk_async_poll_attach(b->ac, &b->p) == RLK_OK &&
        (kick = rlk_async_poll_attach_fd(&b->p, b->kick[0])))
        rlk_async_poll_watch(&b->p, kick, RLK_ASYNC_READ);
    if (!kick || rlk_thread_start(&b->thread, rlk_bg_main, b) != 0) {
        rlk_bg_clear(b);
        return rlk_set_error(b->c, RLK_ERR_NOMEM, "lock runtime: cannot start the background thread");
    }
    b->started = 1;
    return RLK_OK;
}

/* Wakes the loop (b->mu held, the thread started). */
static void rlk_bg_kick(rlk_bg *b)
{
    if (write(b->kick[1], "", 1) < 0) {
        /* Pipe full: the loop has a kick to read already. */
    }
}

int rlk_bg_post(rlk_bg *b, rlk_bg_op *op)
{
    int rc = RLK_OK;

    pthread_mutex_lock(&b->mu);
    if (!b->started)
        rc = rlk_bg_start(b);
    if (rc == RLK_OK && !op->queued) {
        op->queued = 1;
        op->next = NULL;
        if (b->tail)
            b->tail->next = op;
        else
            b->head = op;
        b->tail = op;
        rlk_bg_kick(b);
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void rlk_bg_free(rlk_bg *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    if (b->started)
        rlk_bg_kick(b);
    pthread_mutex_unlock(&b->mu);
    if (b->started)
        pthread_join(b->thread, NULL);
    rlk_bg_clear(b);
    pthread_mutex_destroy(&b->mu);
    free(b);
}
