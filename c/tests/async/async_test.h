/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_test.h - what every async test program (async_cases.c,
 * async_elect.c, async_closed.c, async_delay.c, async_fence.c,
 * async_cluster.c, ...) does the same way: the case table and main()'s
 * runner, a command on a fixture server read back as a number or an OK,
 * a cluster's URL, a fenced write's outcome with the rules of rlk_async.h
 * checked on its callback (ap_in_call, ap_rule_breaks of async_procs.h),
 * the last lost-lock report, and a metrics snapshot's text.
 *
 * check.h is header-only with its counters static per translation unit, so
 * nothing here checks: helpers return what they saw and the programs check
 * it.
 *
 * Linked into every async program by c/tests/async/CMakeLists.txt, beside
 * async_procs.c and one loop's aloop.
 */
#ifndef RLK_TEST_ASYNC_TEST_H
#define RLK_TEST_ASYNC_TEST_H

#include <stddef.h>

#include "cluster.h"
#include "fixture.h"
#include "rlk.h"
#include "rlk_async.h"

/* ---------------------------------------------------------------- the cases */

typedef struct at_case {
    const char *name;
    void (*fn)(void);
} at_case;

#define AT_NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* check.h keeps its counters per translation unit (it is header-only, its
 * state static): the runner runs the cases and sums them up through the
 * program's own check_run and check_summary (AT_MAIN passes them), so that
 * a check that fails in a case counts. */
typedef void (*at_check_run_fn)(const char *name, void (*fn)(void));
typedef int (*at_check_summary_fn)(const char *program);

/* Runs (run: check_run) the case named want, every case for "all"; how many
 * ran. */
int at_run_cases(const at_case *cases, size_t n, const char *want, at_check_run_fn run);

/* A program's main() on one server: starts srv (the fixture's defaults: over
 * TLS when $RLK_TEST_TLS names the certificates), writes its URL into url,
 * prints "<prog> (<loop>) on <url><note>", runs the case named want (every
 * case for "all"), stops srv. 1 when the server did not start, 2 when no case
 * is named want, else summary(prog). */
int at_main(const char *prog, const at_case *cases, size_t n, const char *want, const char *note,
            rlk_fx_server *srv, char *url, size_t url_len, at_check_run_fn run,
            at_check_summary_fn summary);

/* at_main with the calling program's cases array, url array and check.h. */
#define AT_MAIN(prog, cases, want, note, srv, url)                                         \
    at_main((prog), (cases), AT_NCASES(cases), (want), (note), (srv), (url), sizeof(url),  \
            check_run, check_summary)

/* at_main with the server started with the extra arguments (NULL-terminated: the fixture's
 * rlk_fx_config.extra, e.g. --enable-debug-command yes for DEBUG SLEEP). */
int at_main_extra(const char *prog, const at_case *cases, size_t n, const char *want,
                  const char *note, const char *const *extra, rlk_fx_server *srv, char *url,
                  size_t url_len, at_check_run_fn run, at_check_summary_fn summary);

/* A program whose cases put the server to sleep (DEBUG SLEEP): at_main_extra with the debug
 * command enabled. */
#define AT_MAIN_DEBUG(prog, cases, want, srv, url)                                           \
    at_main_extra((prog), (cases), AT_NCASES(cases), (want), NULL, at_debug_args, (srv), (url), \
                  sizeof(url), check_run, check_summary)
/* {"--enable-debug-command", "yes", NULL} */
extern const char *const at_debug_args[];

/* ---------------------------------------------------------------- servers */

/* A command on s (fmt with up to two string arguments): its integer reply,
 * or a string reply read as a number; else -99. */
long long at_srv_num(const rlk_fx_server *s, const char *fmt, const char *a, const char *b);
/* A command on s whose reply is OK: 1, else 0. */
int at_srv_ok(const rlk_fx_server *s, const char *fmt, const char *a);
/* A key's string value on s, into buf ("" when missing or not a string). */
const char *at_srv_get(const rlk_fx_server *s, const char *key, char *buf, size_t len);

/* The cluster's URL (its nodes 0 and 1 as seeds): redis+cluster://, or
 * rediss+cluster:// when node 0 is on TLS. */
void at_cluster_url(const rlk_fx_cluster *cl, char *url, size_t len);

/* ---------------------------------------------------------------- fenced writes */

/* One fenced write's outcome, with a copy of its reply's head. */
typedef struct at_fres {
    int calls, err;
    long long value;
    char errstr[512];
    int rtype;                      /* -1: no reply */
    long long rint;
    char rstr[128];
    size_t relems;
} at_fres;

/* rlk_async_fence_write's callback whose arg is an at_fres: records the
 * outcome; a second call, or one from inside the call that made the request
 * (ap_in_call), counts in ap_rule_breaks. */
void at_on_fence(rlk_async *ac, const rlk_async_result *r, const redisReply *reply, void *p);
/* aloop_run_until's condition: the at_fres p has its callback. */
int at_fres_done(void *p);

/* ---------------------------------------------------------------- lost locks */

/* The lost-lock reports of the client whose lost callback is at_on_lost
 * (rlk_async_set_lost_callback(ac, at_on_lost, NULL)): how many, and the
 * last one's. A case sets calls to 0 before it installs the callback. */
typedef struct at_lost_log {
    int calls, reason, kind;
    long long at;                   /* rlk_fx_now_ms() of the last report */
    char name[128], owner[256];
} at_lost_log;

extern at_lost_log at_lost;

void at_on_lost(int kind, const char *name, const char *owner, int reason, void *ud);
/* aloop_run_until's condition: a lost report came (at_lost.calls > 0). */
int at_lost_done(void *p);

/* ---------------------------------------------------------------- metrics */

/* m's text in format (RLK_METRICS_PROMETHEUS, RLK_METRICS_JSON), malloc'd;
 * NULL when it could not be made (*ret: rlk_metrics_format's return,
 * RLK_OK when it wrote it). */
char *at_metrics_text(const rlk_metrics *m, int format, int *ret);
/* Writes text to path when path is set ($RLK_TEST_PROM_OUT: for promtool,
 * metrics_promtool.sh): 1 written (or no path), 0 not. */
int at_write_text(const char *path, const char *text);

#endif /* RLK_TEST_ASYNC_TEST_H */
