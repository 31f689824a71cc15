/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lq.c - the process-wide local wait queues (lq.h): a thread sleeps on its
 * node's condition variable until it is the head. The queue orders attempts
 * only: Redis still decides who holds the lock, and the unlock message that
 * a poke runs ahead of still arrives and is the one that counts for
 * correctness. docs/runtime.md, "Fairness and handoff".
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "runtime/lq.h"
#include "runtime/sub.h"

struct rlk_lq {
    rlk_lq *next;
    char *key;
    int refs;                   /* lock handles using it */
    pthread_mutex_t mu;
    rlk_lq_node *head;
    rlk_lq_node *tail;
    atomic_int first;           /* the last attempt of a head found it first in the server's
                                   queue (the reentrant lock: rlk_lq_note_first) */
};

static pthread_mutex_t rlk_lq_registry_mu = PTHREAD_MUTEX_INITIALIZER;
static rlk_lq *rlk_lq_registry;

/* "<len>:<addr>/<db>/<name>": unambiguous whatever the address holds. */
static char *rlk_lq_key(const char *addr, int db, const char *name)
{
    size_t len = strlen(addr) + strlen(name) + 48;
    char *key = malloc(len);

    if (key)
        snprintf(key, len, "%zu:%s/%d/%s", strlen(addr), addr, db, name);
    return key;
}

rlk_lq *rlk_lq_get(const char *addr, int db, const char *name)
{
    char *key = rlk_lq_key(addr, db, name);
    rlk_lq *q;

    if (!key)
        return NULL;
    pthread_mutex_lock(&rlk_lq_registry_mu);
    for (q = rlk_lq_registry; q && strcmp(q->key, key) != 0; q = q->next)
        ;
    if (!q && (q = calloc(1, sizeof *q))) {     /* a new queue, first in the registry */
        q->key = key;
        key = NULL;
        pthread_mutex_init(&q->mu, NULL);
        q->next = rlk_lq_registry;
        rlk_lq_registry = q;
    }
    free(key);
    if (q)
        q->refs++;
    pthread_mutex_unlock(&rlk_lq_registry_mu);
    return q;
}

void rlk_lq_put(rlk_lq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&rlk_lq_registry_mu);
    if (--q->refs == 0) {
        for (rlk_lq **pp = &rlk_lq_registry; *pp; pp = &(*pp)->next) {
            if (*pp == q) {
                *pp = q->next;
                break;
            }
        }
        pthread_mutex_destroy(&q->mu);
        free(q->key);
        free(q);
    }
    pthread_mutex_unlock(&rlk_lq_registry_mu);
}

int rlk_lq_busy(rlk_lq *q)
{
    int busy;

    pthread_mutex_lock(&q->mu);
    busy = q->head != NULL;
    pthread_mutex_unlock(&q->mu);
    return busy;
}

int rlk_lq_waiting(rlk_lq *q)
{
    int n = 0;

    pthread_mutex_lock(&q->mu);
    for (const rlk_lq_node *e = q->head; e; e = e->next)
        n++;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* q->mu held; n is in the queue and not its head. */
static void rlk_lq_remove(rlk_lq *q, rlk_lq_node *n)
{
    rlk_lq_node *prev = q->head;

    while (prev && prev->next != n)
        prev = prev->next;
    if (!prev)
        return;
    prev->next = n->next;
    if (q->tail == n)
        q->tail = prev;
}

int rlk_lq_enter(rlk_lq *q, rlk_lq_node *n, long long until_ns)
{
    int timed_out = 0, rc = RLK_OK;

    memset(n, 0, sizeof *n);
    if (rlk_clock_cond_init(&n->cv) != 0)
        return RLK_ERR_NOMEM;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    while (q->head != n) {
        if (timed_out) {
            rlk_lq_remove(q, n);
            rc = RLK_ERR_BUSY;
            break;
        }
        timed_out = rlk_clock_cond_wait_until(&n->cv, &q->mu, until_ns);
        n->waited = 1;
    }
    pthread_mutex_unlock(&q->mu);
    if (rc != RLK_OK)
        pthread_cond_destroy(&n->cv);
    return rc;
}

void rlk_lq_leave(rlk_lq *q, rlk_lq_node *n)
{
    pthread_mutex_lock(&q->mu);
    if (q->head == n) {
        q->head = n->next;
        if (q->head)
            pthread_cond_signal(&q->head->cv);
        else
            q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    pthread_cond_destroy(&n->cv);
}

void rlk_lq_set_sub(rlk_lq *q, rlk_lq_node *n, rlk_sub *sub, rlk_sub_chan *ch)
{
    pthread_mutex_lock(&q->mu);
    n->sub = sub;
    n->ch = ch;
    pthread_mutex_unlock(&q->mu);
}

void rlk_lq_note_first(rlk_lq *q, int first)
{
    atomic_store_explicit(&q->first, first, memory_order_relaxed);
}

int rlk_lq_expects_first(rlk_lq *q)
{
    return atomic_load_explicit(&q->first, memory_order_relaxed);
}

/* q->mu is held across the poke: the head cannot leave (and drop its
 * subscription) meanwhile. Lock order: q->mu, then the subscriber's mutex. */
void rlk_lq_poke(rlk_lq *q)
{
    pthread_mutex_lock(&q->mu);
    if (q->head && q->head->ch)
        rlk_sub_poke(q->head->sub, q->head->ch);
    pthread_mutex_unlock(&q->mu);
}
