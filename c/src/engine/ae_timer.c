/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_timer.c - the async engine's timers: a heap ordered by due time (then
 * by creation), behind the one timer the loop gives the client
 * (hooks.set_timer). rlk_ae_timer_add / rlk_ae_timer_del, what the kinds'
 * requests use, are declared in engine.h. On the loop's thread.
 */
#include <stdlib.h>

#include "client/clock.h"
#include "engine/engine.h"
#include "engine/ae_state.h"
#include "engine/ae_timer.h"

long long rlk_ae_now_ms(void)
{
    return rlk_clock_now_ns() / RLK_NS_PER_MS;
}

static int ae_timer_before(const rlk_ae_timer *a, const rlk_ae_timer *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void ae_heap_set(rlk_async *ac, size_t i, rlk_ae_timer *t)
{
    ac->heap[i] = t;
    t->idx = i;
}

static void ae_heap_up(rlk_async *ac, size_t i)
{
    rlk_ae_timer *t = ac->heap[i];

    while (i > 0 && ae_timer_before(t, ac->heap[(i - 1) / 2])) {
        ae_heap_set(ac, i, ac->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    ae_heap_set(ac, i, t);
}

static void ae_heap_down(rlk_async *ac, size_t i)
{
    rlk_ae_timer *t = ac->heap[i];
    size_t c;

    while ((c = 2 * i + 1) < ac->nheap) {
        if (c + 1 < ac->nheap && ae_timer_before(ac->heap[c + 1], ac->heap[c]))
            c++;        /* the earlier child */
        if (!ae_timer_before(ac->heap[c], t))
            break;
        ae_heap_set(ac, i, ac->heap[c]);
        i = c;
    }
    ae_heap_set(ac, i, t);
}

static void ae_heap_remove(rlk_async *ac, rlk_ae_timer *t)
{
    size_t i = t->idx;
    rlk_ae_timer *last = ac->heap[--ac->nheap];

    if (i == ac->nheap)
        return;
    ae_heap_set(ac, i, last);
    ae_heap_up(ac, i);
    ae_heap_down(ac, last->idx);
}

rlk_ae_timer *rlk_ae_timer_add(rlk_async *ac, long long ms, rlk_ae_timer_fn fn, void *arg)
{
    rlk_ae_timer *t;

    if (ac->closing)
        return NULL;
    if (ac->nheap == ac->capheap) {
        size_t cap = ac->capheap ? ac->capheap * 2 : 64;
        rlk_ae_timer **h = realloc(ac->heap, cap * sizeof *h);

        if (!h)
            return NULL;
        ac->heap = h;
        ac->capheap = cap;
    }
    if (!(t = malloc(sizeof *t)))
        return NULL;
    *t = (rlk_ae_timer){.ac = ac, .at = rlk_ae_now_ms() + (ms > 0 ? ms : 0), .seq = ac->seq++,
                        .fn = fn, .arg = arg};
    ac->heap[ac->nheap++] = t;
    ae_heap_up(ac, ac->nheap - 1);
    if (!ac->depth)
        ae_timer_arm(ac);     /* a call from outside the loop's handlers */
    return t;
}

void rlk_ae_timer_del(rlk_ae_timer *t)
{
    if (!t)
        return;
    ae_heap_remove(t->ac, t);
    free(t);
}

void ae_timer_run(rlk_async *ac)
{
    long long now = rlk_ae_now_ms();
    unsigned long long limit = ac->seq;     /* not the ones set meanwhile for "now" */

    while (!ac->closing && ac->nheap && ac->heap[0]->at <= now) {
        rlk_ae_timer *t = ac->heap[0];

        if (t->seq >= limit && t->at >= now)
            break;
        ae_heap_remove(ac, t);
        t->fn(ac, t->arg);
        free(t);
    }
}

void ae_timer_arm(rlk_async *ac)
{
    long long want = -1;

    if (!ac->attached || ac->closing)
        return;
    if (ac->qhead)
        want = 0;
    else if (ac->nheap && (want = ac->heap[0]->at - rlk_ae_now_ms()) < 0)
        want = 0;
    /* Always re-arm a timer (a relative delay drifts); skip only "none" twice. */
    if (want == -1 && ac->armed == -1)
        return;
    ac->armed = want;
    ac->hooks.set_timer(ac->hooks.data, want);
}

void ae_timer_free(rlk_async *ac)
{
    for (size_t i = 0; i < ac->nheap; i++)
        free(ac->heap[i]);
    free(ac->heap);
    ac->heap = NULL;
    ac->nheap = ac->capheap = 0;
}
