/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exposition.c - reading the public metrics (rlk.h, rlk_metrics_*): the
 * switch, the watched names, the snapshot of a client's counters (with the
 * hold registry's gauges), the sum of snapshots, and their Prometheus and
 * JSON exposition into a caller's buffer. Recording is metrics.c's, below
 * the registry. docs/observability.md lists every metric.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "client/sentinel.h"
#include "engine/metrics.h"
#include "runtime/rt.h"

#define RLK_M_LOAD(cell) atomic_load_explicit(&(cell), memory_order_relaxed)

/* ---------------------------------------------------------------- the public calls */

int rlk_metrics_set_enabled(rlk_client *c, int on)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    if (!rt)
        return c ? RLK_ERR_NOMEM : RLK_ERR_ARG;
    atomic_store_explicit(&rt->counters.metrics_off, !on, memory_order_relaxed);
    return RLK_OK;
}

/* Serialises rlk_metrics_watch (rare); readers need no lock: a name is
 * written before nnames counts it (release/acquire). */
static pthread_mutex_t rlk_metrics_watch_mu = PTHREAD_MUTEX_INITIALIZER;

int rlk_metrics_watch(rlk_client *c, const char *name)
{
    rlk_rt *rt;
    rlk_rt_counters *k;
    int n, rc = RLK_OK;

    if (!c)
        return RLK_ERR_ARG;
    if (!name || !name[0] || strlen(name) >= RLK_METRICS_NAME_SIZE)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_metrics_watch: the name must have 1 to %d bytes",
                             RLK_METRICS_NAME_SIZE - 1);
    if (!(rt = rlk_rt_get(c)))
        return RLK_ERR_NOMEM;
    k = &rt->counters;
    pthread_mutex_lock(&rlk_metrics_watch_mu);
    n = atomic_load_explicit(&k->nnames, memory_order_relaxed);
    if (!rlk_metrics_name(k, name)) {
        if (n >= RLK_METRICS_NAMES_MAX) {
            rc = rlk_set_error(c, RLK_ERR_ARG, "rlk_metrics_watch %s: %d names are watched already",
                               name, RLK_METRICS_NAMES_MAX);
        } else {
            snprintf(k->names[n].name, sizeof k->names[n].name, "%s", name);
            atomic_store_explicit(&k->nnames, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&rlk_metrics_watch_mu);
    return rc;
}

/* ---------------------------------------------------------------- exposition */

/* Appends into a caller's buffer, counting what the whole text needs. */
typedef struct rlk_out {
    char *buf;
    size_t len, pos;        /* pos: bytes the text needs so far (may pass len) */
} rlk_out;

static void rlk_put(rlk_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rlk_put(rlk_out *o, const char *fmt, ...)
{
    va_list ap;
    size_t room = o->pos < o->len ? o->len - o->pos : 0;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->pos += (size_t)n;
}

/* A name's label value or JSON string body, escaped (\\, \", \n). */
static void rlk_put_escaped(rlk_out *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            rlk_put(o, "\\%c", *s);
        else if (*s == '\n')
            rlk_put(o, "\\n");
        else if ((unsigned char)*s < 0x20)
            rlk_put(o, "\\u%04x", (unsigned)(unsigned char)*s);
        else
            rlk_put(o, "%c", *s);
    }
}

/* The description of one metric family. */
typedef struct rlk_family {
    const char *name;
    const char *type;       /* "counter", "gauge", "histogram" */
    const char *help;
} rlk_family;

static void rlk_prom_head(rlk_out *o, const rlk_family *f)
{
    rlk_put(o, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
}

/* A sample's name and labels, its value to follow: "<name><suffix>{extra,labels}", without
 * what is NULL or empty (no braces when both are). */
static void rlk_prom_sample(rlk_out *o, const char *name, const char *suffix, const char *extra,
                            const char *labels)
{
    int has_extra = extra && extra[0], has_labels = labels && labels[0];

    rlk_put(o, "%s%s", name, suffix);
    if (has_extra || has_labels)
        rlk_put(o, "{%s%s%s}", has_extra ? extra : "", has_extra && has_labels ? "," : "",
                has_labels ? labels : "");
}

/* One sample: a counter's (v), or a gauge's (the long long v holds when gauge). */
static void rlk_prom_value(rlk_out *o, const char *name, const char *extra, const char *labels,
                           unsigned long long v, int gauge)
{
    rlk_prom_sample(o, name, "", extra, labels);
    if (gauge)
        rlk_put(o, " %lld\n", (long long)v);
    else
        rlk_put(o, " %llu\n", v);
}

static void rlk_prom_hist(rlk_out *o, const char *name, const char *extra, const char *labels,
                          const rlk_histogram *h)
{
    unsigned long long cum = 0;
    char le[640];

    for (int i = 0; i <= RLK_METRICS_BUCKETS; i++) {
        cum += h->buckets[i];
        if (i < RLK_METRICS_BUCKETS)
            snprintf(le, sizeof le, "%s%sle=\"%g\"", extra ? extra : "", extra ? "," : "",
                     rlk_metrics_bucket_bound(i));
        else
            snprintf(le, sizeof le, "%s%sle=\"+Inf\"", extra ? extra : "", extra ? "," : "");
        rlk_prom_sample(o, name, "_bucket", le, labels);
        rlk_put(o, " %llu\n", cum);
    }
    rlk_prom_sample(o, name, "_sum", extra, labels);
    rlk_put(o, " %.9f\n", (double)h->sum_ns / 1e9);
    rlk_prom_sample(o, name, "_count", extra, labels);
    rlk_put(o, " %llu\n", cum);
}

/* The snapshot's fixed families after the acquisitions, in exposition order (counters, gauges,
 * histograms): one row per sample, a family's first row with its name and help, the rows after
 * it without a name more samples of it; the field's offset in rlk_metrics, and where
 * rlk_metrics_get reads a counter or a histogram. */
typedef struct rlk_field_def {
    rlk_family f;
    const char *extra;      /* a label of this sample, or NULL */
    size_t off;
    char from;              /* where rlk_metrics_get reads it: 'k' the runtime's counters, 'c'
                               the client's, 0 elsewhere (the sentinel's switches, the gauges) */
    size_t src;             /* its offset there */
} rlk_field_def;

#define RLK_OFF(field) offsetof(rlk_metrics, field)
#define RLK_K(field) 'k', offsetof(rlk_rt_counters, field)
#define RLK_NOWHERE 0, 0
/* A field read from the runtime's (the client's) counter of the same name. */
#define RLK_RT(field) RLK_OFF(field), RLK_K(field)
#define RLK_CL(field) RLK_OFF(field), 'c', offsetof(rlk_client_counters, field)
#define RLK_MORE {NULL, "counter", NULL}    /* another sample of the counter above */

static const rlk_field_def rlk_fields[] = {
    {{"rlk_acquire_attempts_total", "counter",
      "Lock acquire script calls (attempts; one acquisition may take several)."}, NULL,
     RLK_RT(acquire_calls)},
    {{"rlk_waits_total", "counter", "Sleeps on a lock's channel waiting for a release."}, NULL,
     RLK_RT(waits)},
    {{"rlk_wakeups_total", "counter",
      "Sleeps ended by a wake-up message: permit (unlock, grant) or all (read unlock, reconnect)."},
     "by=\"permit\"", RLK_RT(wake_permits)},
    {RLK_MORE, "by=\"all\"", RLK_RT(wake_all)},
    {{"rlk_ttl_wakeups_total", "counter",
      "Sleeps ended by the holder's TTL running out with no message."}, NULL,
     RLK_RT(ttl_wakeups)},
    {{"rlk_handoffs_received_total", "counter",
      "Acquisitions right after a wake-up message (a release handed the lock over)."}, NULL,
     RLK_RT(handoffs)},
    {{"rlk_acquired_after_wait_total", "counter", "Acquisitions that slept at least once."}, NULL,
     RLK_RT(acquired_after_wait)},
    {{"rlk_renewals_total", "counter", "Renewal calls (watchdog, permit keeper)."}, NULL,
     RLK_OFF(renewals), RLK_K(renew_calls)},
    {{"rlk_renewal_failures_total", "counter", "Renewal calls that failed."}, NULL,
     RLK_OFF(renewal_failures), RLK_K(renew_errors)},
    {{"rlk_renewals_unacked_total", "counter",
      "Renewal calls that fewer than min_replicas replicas acknowledged."}, NULL,
     RLK_OFF(renewals_unacked), RLK_K(renew_unacked)},
    {{"rlk_locks_lost_total", "counter",
      "Held locks declared lost: gone (no longer held) or expired (renewals failed)."},
     "cause=\"gone\"", RLK_RT(locks_lost_gone)},
    {RLK_MORE, "cause=\"expired\"", RLK_RT(locks_lost_expired)},
    {{"rlk_lost_replies_total", "counter", "Lock calls whose reply was lost."}, NULL,
     RLK_RT(lost_replies)},
    {{"rlk_lost_replies_settled_total", "counter",
      "How lost replies settled: adopted (had run, kept), not_run, unsettled, given_back."},
     "outcome=\"adopted\"", RLK_RT(lost_adopted)},
    {RLK_MORE, "outcome=\"not_run\"", RLK_RT(lost_not_run)},
    {RLK_MORE, "outcome=\"unsettled\"", RLK_RT(lost_unsettled)},
    {RLK_MORE, "outcome=\"given_back\"", RLK_RT(lost_given_back)},
    {{"rlk_reconnects_total", "counter", "Pool connections opened again after a drop."}, NULL,
     RLK_CL(reconnects)},
    {{"rlk_connect_failures_total", "counter",
      "Connects that failed: refused, unreachable, timed out, TLS handshake."}, NULL,
     RLK_CL(connect_failures)},
    {{"rlk_redirects_total", "counter", "Cluster MOVED and ASK redirects followed."}, NULL,
     RLK_CL(redirects)},
    {{"rlk_failovers_total", "counter", "Sentinel master switches followed."}, NULL,
     RLK_OFF(failovers), RLK_NOWHERE},
    {{"rlk_noscript_reloads_total", "counter", "NOSCRIPT replies answered by SCRIPT LOAD."}, NULL,
     RLK_CL(noscript_reloads)},
    {{"rlk_subscriber_connects_total", "counter", "Subscriber connections opened."}, NULL,
     RLK_RT(sub_connects)},
    {{"rlk_subscriber_drops_total", "counter", "Subscriber connections lost."}, NULL,
     RLK_RT(sub_drops)},
    {{"rlk_fence_writes_total", "counter",
      "Fenced writes by result: accepted, refused (a token below the highest accepted)."},
     "result=\"accepted\"", RLK_RT(fence_writes[RLK_FENCE_ACCEPTED])},
    {RLK_MORE, "result=\"refused\"", RLK_RT(fence_writes[RLK_FENCE_REFUSED])},
    {{"rlk_lock_delay_refusals_total", "counter",
      "Lock acquire attempts refused because the lock was in its lock-delay."}, NULL,
     RLK_RT(delay_refusals)},
    {{"rlk_held_grants_total", "counter",
      "Lock acquisitions on a held grant: the release wrote the lock in the waiter's name."},
     NULL, RLK_RT(held_grants)},
    {{"rlk_locks_held", "gauge", "Holds in the client's registry."}, NULL, RLK_OFF(locks_held),
     RLK_NOWHERE},
    {{"rlk_watchdog_entries", "gauge", "Holds the watchdog renews (no lease given)."}, NULL,
     RLK_OFF(watchdog_entries), RLK_NOWHERE},
    {{"rlk_requests_waiting", "gauge", "Acquisition calls under way."}, NULL,
     RLK_OFF(requests_waiting), RLK_NOWHERE},
    {{"rlk_wait_seconds", "histogram", "Acquisition calls that acquired: from call to return."},
     NULL, RLK_OFF(wait), RLK_K(wait_h)},
    {{"rlk_hold_seconds", "histogram", "Locks: from acquisition to the release of the last hold."},
     NULL, RLK_OFF(hold), RLK_K(hold_h)},
    {{"rlk_handoff_latency_seconds", "histogram",
      "From a wake-up message to the acquisition it led to."}, NULL, RLK_OFF(handoff),
     RLK_K(handoff_h)},
};

static const rlk_family rlk_fam_acq = {"rlk_acquisitions_total", "counter",
    "Acquisition calls by kind and result (acquired, timed_out, refused, error)."};
static const rlk_family rlk_fam_enabled = {"rlk_metrics_enabled", "gauge",
    "1 when recording is on (rlk_metrics_set_enabled)."};

#define RLK_NFIELDS (sizeof rlk_fields / sizeof rlk_fields[0])
/* The field at offset off of m, as its type. */
#define RLK_AT(type, m, off) ((type *)((char *)(m) + (off)))
#define RLK_CAT(type, m, off) ((const type *)((const char *)(m) + (off)))
static const rlk_family rlk_name_fams[4] = {
    {"rlk_name_acquisitions_total", "counter", "Acquisition calls of a watched name by result."},
    {"rlk_name_wait_seconds", "histogram", "Acquisitions of a watched name: wait."},
    {"rlk_name_hold_seconds", "histogram", "Holds of a watched name."},
    {"rlk_name_fence_writes_total", "counter",
     "Fenced writes whose fence key is a watched name, by result: accepted, refused."},
};
static const char *const rlk_fence_result_names[RLK_FENCE_RESULTS] = {"accepted", "refused"};

static void rlk_metrics_hist_get(rlk_rt_hist *h, rlk_histogram *out)
{
    out->count = 0;
    out->sum_ns = RLK_M_LOAD(h->sum_ns);
    for (int i = 0; i <= RLK_METRICS_BUCKETS; i++) {
        out->buckets[i] = RLK_M_LOAD(h->buckets[i]);
        out->count += out->buckets[i];
    }
}

int rlk_metrics_get(rlk_client *c, rlk_metrics *out)
{
    rlk_rt *rt;
    rlk_rt_counters *k;
    int n;

    if (!out)
        return RLK_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (!c)
        return RLK_ERR_ARG;
    if (!(rt = rlk_rt_get(c)))
        return RLK_ERR_NOMEM;
    k = &rt->counters;
    out->enabled = !RLK_M_LOAD(k->metrics_off);
    for (int i = 0; i < RLK_MKIND_COUNT; i++)
        for (int j = 0; j < RLK_ACQ_RESULTS; j++)
            out->acquisitions[i][j] = RLK_M_LOAD(k->acquisitions[i][j]);
    for (size_t d = 0; d < RLK_NFIELDS; d++) {     /* the counters and histograms, by the table */
        const rlk_field_def *x = &rlk_fields[d];
        char *from = x->from == 'k' ? (char *)k : x->from == 'c' ? (char *)c->counters : NULL;

        if (from && x->f.type[0] == 'h')
            rlk_metrics_hist_get((rlk_rt_hist *)(from + x->src),
                                 RLK_AT(rlk_histogram, out, x->off));
        else if (from)
            *RLK_AT(unsigned long long, out, x->off) =
                RLK_M_LOAD(*(atomic_ullong *)(from + x->src));
    }
    out->failovers = rlk_sentinel_switches(c, NULL);
    rlk_wd_gauges(rt->wd, &out->locks_held, &out->watchdog_entries);
    out->requests_waiting = (long long)RLK_M_LOAD(k->requests_waiting);
    n = atomic_load_explicit(&k->nnames, memory_order_acquire);
    out->nnames = (size_t)n;
    for (int i = 0; i < n; i++) {
        rlk_name_metrics *o = &out->names[i];

        memcpy(o->name, k->names[i].name, sizeof o->name);
        for (int j = 0; j < RLK_ACQ_RESULTS; j++)
            o->acquisitions[j] = RLK_M_LOAD(k->names[i].acquisitions[j]);
        rlk_metrics_hist_get(&k->names[i].wait, &o->wait);
        rlk_metrics_hist_get(&k->names[i].hold, &o->hold);
        for (int j = 0; j < RLK_FENCE_RESULTS; j++)
            o->fence_writes[j] = RLK_M_LOAD(k->names[i].fence_writes[j]);
    }
    return RLK_OK;
}

/* A snapshot's cells from acquisitions up to nnames, and a watched name's after its name, are
 * 64-bit counts (the gauges' in two's complement): a sum adds them one by one. */
static void rlk_cells_add(void *a, const void *b, size_t bytes)
{
    unsigned long long *x = a;
    const unsigned long long *y = b;

    for (size_t i = 0; i < bytes / sizeof *x; i++)
        x[i] += y[i];
}

void rlk_metrics_add(rlk_metrics *a, const rlk_metrics *b)
{
    if (!a || !b)
        return;
    a->enabled = a->enabled || b->enabled;
    rlk_cells_add(a->acquisitions, b->acquisitions, RLK_OFF(nnames) - RLK_OFF(acquisitions));
    for (size_t i = 0; i < b->nnames && i < RLK_METRICS_NAMES_MAX; i++) {
        size_t j = 0;

        while (j < a->nnames && strcmp(a->names[j].name, b->names[i].name) != 0)
            j++;
        if (j == a->nnames) {
            if (a->nnames >= RLK_METRICS_NAMES_MAX)
                continue;
            memset(&a->names[j], 0, sizeof a->names[j]);
            memcpy(a->names[j].name, b->names[i].name, sizeof a->names[j].name);
            a->names[j].name[RLK_METRICS_NAME_SIZE - 1] = '\0';
            a->nnames++;
        }
        rlk_cells_add(a->names[j].acquisitions, b->names[i].acquisitions,
                      sizeof(rlk_name_metrics) - offsetof(rlk_name_metrics, acquisitions));
    }
}

static const char *rlk_label_of(const char *const *labels, size_t i)
{
    return labels && labels[i] ? labels[i] : NULL;
}

static void rlk_prom(rlk_out *o, const rlk_metrics *m, size_t n, const char *const *labels)
{
    char extra[600];
    int any_names = 0;  /* a snapshot has watched names: their families follow */

    /* Which rlk and hiredis made these numbers (one line, value 1: join on it in queries). */
    rlk_put(o, "# HELP rlk_build_info the rlk library's version and the hiredis it was built "
            "with\n# TYPE rlk_build_info gauge\nrlk_build_info{version=\"%s\",hiredis=\"%d.%d.%d\"} "
            "1\n", RLK_VERSION, HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    rlk_prom_head(o, &rlk_fam_enabled);
    for (size_t i = 0; i < n; i++)
        rlk_prom_value(o, rlk_fam_enabled.name, NULL, rlk_label_of(labels, i),
                       (unsigned long long)m[i].enabled, 1);
    rlk_prom_head(o, &rlk_fam_acq);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < RLK_MKIND_COUNT; k++)
            for (int r = 0; r < RLK_ACQ_RESULTS; r++) {
                snprintf(extra, sizeof extra, "kind=\"%s\",result=\"%s\"", rlk_metrics_kind_name(k),
                         rlk_acquire_result_name(r));
                rlk_prom_value(o, rlk_fam_acq.name, extra, rlk_label_of(labels, i),
                               m[i].acquisitions[k][r], 0);
            }
    for (size_t d = 0; d < RLK_NFIELDS;) {
        const rlk_family *f = &rlk_fields[d].f;
        size_t end = d + 1;     /* the samples of one family: its first row and those after it
                                   without a family of their own */

        while (end < RLK_NFIELDS && !rlk_fields[end].f.name)
            end++;
        rlk_prom_head(o, f);
        for (size_t i = 0; i < n; i++)
            for (size_t e = d; e < end; e++) {
                const rlk_field_def *x = &rlk_fields[e];

                if (f->type[0] == 'h')
                    rlk_prom_hist(o, f->name, x->extra, rlk_label_of(labels, i),
                                  RLK_CAT(rlk_histogram, &m[i], x->off));
                else
                    rlk_prom_value(o, f->name, x->extra, rlk_label_of(labels, i),
                                   *RLK_CAT(unsigned long long, &m[i], x->off), f->type[0] == 'g');
            }
        d = end;
    }
    for (size_t i = 0; i < n; i++)
        any_names |= m[i].nnames > 0;
    for (int f = 0; any_names && f < 4; f++) {
        rlk_prom_head(o, &rlk_name_fams[f]);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < m[i].nnames && j < RLK_METRICS_NAMES_MAX; j++) {
                const rlk_name_metrics *nm = &m[i].names[j];
                rlk_out e = {extra, sizeof extra - 1, 0};
                size_t named;

                rlk_put(&e, "name=\"");
                rlk_put_escaped(&e, nm->name);
                rlk_put(&e, "\"");
                named = e.pos;
                if (f == 1 || f == 2) {
                    rlk_prom_hist(o, rlk_name_fams[f].name, extra, rlk_label_of(labels, i),
                                  f == 1 ? &nm->wait : &nm->hold);
                    continue;
                }
                /* A counter by result: acquisitions (0), fenced writes (3). */
                for (int rr = 0; rr < (f == 0 ? RLK_ACQ_RESULTS : RLK_FENCE_RESULTS); rr++) {
                    e.pos = named;
                    rlk_put(&e, ",result=\"%s\"",
                            f == 0 ? rlk_acquire_result_name(rr) : rlk_fence_result_names[rr]);
                    rlk_prom_value(o, rlk_name_fams[f].name, extra, rlk_label_of(labels, i),
                                   f == 0 ? nm->acquisitions[rr] : nm->fence_writes[rr], 0);
                }
            }
    }
}

/* A histogram's JSON value: {"count":..,"sum_seconds":..,"buckets":[..]}. */
static void rlk_json_hist(rlk_out *o, const rlk_histogram *h)
{
    rlk_put(o, "{\"count\":%llu,\"sum_seconds\":%.9f,\"buckets\":[", h->count,
            (double)h->sum_ns / 1e9);
    for (int i = 0; i <= RLK_METRICS_BUCKETS; i++) {
        if (i < RLK_METRICS_BUCKETS)
            rlk_put(o, "%s{\"le\":%g,\"count\":%llu}", i ? "," : "", rlk_metrics_bucket_bound(i),
                    h->buckets[i]);
        else
            rlk_put(o, ",{\"le\":\"+Inf\",\"count\":%llu}", h->buckets[i]);
    }
    rlk_put(o, "]}");
}

/* {"acquired":1,"timed_out":0,...}: acquisitions by result. */
static void rlk_json_results(rlk_out *o, const unsigned long long *counts)
{
    rlk_put(o, "{");
    for (int r = 0; r < RLK_ACQ_RESULTS; r++)
        rlk_put(o, "%s\"%s\":%llu", r ? "," : "", rlk_acquire_result_name(r), counts[r]);
    rlk_put(o, "}");
}

static void rlk_json_one(rlk_out *o, const rlk_metrics *m, const char *label)
{
    const rlk_family *fam = NULL;

    rlk_put(o, "{");
    if (label) {
        rlk_put(o, "\"labels\":\"");
        rlk_put_escaped(o, label);
        rlk_put(o, "\",");
    }
    rlk_put(o, "\"enabled\":%d,\"acquisitions\":{", m->enabled);
    for (int k = 0; k < RLK_MKIND_COUNT; k++) {
        rlk_put(o, "%s\"%s\":", k ? "," : "", rlk_metrics_kind_name(k));
        rlk_json_results(o, m->acquisitions[k]);
    }
    /* An object per type ("counters", "gauges", "histograms"), a key per sample:
     * rlk_wakeups_total{by="permit"} -> "rlk_wakeups_total:by=permit". */
    for (size_t d = 0; d < RLK_NFIELDS; d++) {
        const rlk_field_def *x = &rlk_fields[d];

        if (x->f.name && (!fam || strcmp(fam->type, x->f.type) != 0))
            rlk_put(o, "},\"%ss\":{\"", x->f.type);
        else
            rlk_put(o, ",\"");
        fam = x->f.name ? &x->f : fam;
        rlk_put(o, "%s%s", fam->name, x->extra ? ":" : "");
        for (const char *s = x->extra; s && *s; s++)
            if (*s != '"')
                rlk_put(o, "%c", *s);
        if (fam->type[0] == 'h') {
            rlk_put(o, "\":");
            rlk_json_hist(o, RLK_CAT(rlk_histogram, m, x->off));
        } else if (fam->type[0] == 'g') {
            rlk_put(o, "\":%lld", *RLK_CAT(long long, m, x->off));
        } else {
            rlk_put(o, "\":%llu", *RLK_CAT(unsigned long long, m, x->off));
        }
    }
    rlk_put(o, "},\"names\":[");
    for (size_t j = 0; j < m->nnames && j < RLK_METRICS_NAMES_MAX; j++) {
        const rlk_name_metrics *nm = &m->names[j];

        rlk_put(o, "%s{\"name\":\"", j ? "," : "");
        rlk_put_escaped(o, nm->name);
        rlk_put(o, "\",\"acquisitions\":");
        rlk_json_results(o, nm->acquisitions);
        rlk_put(o, ",\"wait_seconds\":");
        rlk_json_hist(o, &nm->wait);
        rlk_put(o, ",\"hold_seconds\":");
        rlk_json_hist(o, &nm->hold);
        rlk_put(o, ",\"fence_writes\":{\"accepted\":%llu,\"refused\":%llu}}",
                nm->fence_writes[RLK_FENCE_ACCEPTED], nm->fence_writes[RLK_FENCE_REFUSED]);
    }
    rlk_put(o, "]}");
}

int rlk_metrics_format(const rlk_metrics *m, size_t n, const char *const *labels, int format,
                       char *buf, size_t len, size_t *needed)
{
    rlk_out o = {buf, len, 0};

    if (needed)
        *needed = 0;
    if ((!m && n) || (!buf && len) ||
        (format != RLK_METRICS_PROMETHEUS && format != RLK_METRICS_JSON))
        return RLK_ERR_ARG;
    if (format == RLK_METRICS_PROMETHEUS) {
        rlk_prom(&o, m, n, labels);
    } else {
        if (n != 1)
            rlk_put(&o, "[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                rlk_put(&o, ",");
            rlk_json_one(&o, &m[i], rlk_label_of(labels, i));
        }
        rlk_put(&o, n != 1 ? "]\n" : "\n");
    }
    if (needed)
        *needed = o.pos + 1;
    if (o.pos + 1 > len) {
        if (len)
            buf[len - 1] = '\0';
        return RLK_ERR_ARG;
    }
    return RLK_OK;
}
