/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_opts: see bench_opts.h. */
#define _POSIX_C_SOURCE 200809L
#include "bench_opts.h"
#include "bench_kinds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rlk_bench_usage(FILE *f)
{
    fputs("usage: rlk-bench --workload w1|w2 --clients N --duration SECONDS --port PORT\n"
          "                 [--variant NAME] [--host 127.0.0.1] [--key-prefix PREFIX]\n"
          "                 [--hold-ms 1] [--events-out FILE] [--grace SECONDS] [--baseline]\n"
          "                 [--scripts-dir DIR] [--procs] [--lock reentrant|fair|spin|setnx|\n"
          "                 rwlock-write|semaphore|psemaphore|fastmulti|multilock] [--names N]\n"
          "                 [--tls [--cacert FILE] [--cert FILE --key FILE]]\n"
          "                 [--metrics-out FILE] [--no-metrics] [--api blocking|async] [--w1-lock]\n"
          "       rlk-bench --workload pending --requests N --names M --port PORT\n"
          "                 [--api async|blocking] [--key-prefix PREFIX] [--grace SECONDS]\n"
          "\n"
          "  --workload w1    uncontended: each client acquires and releases PREFIX:w1:<i>\n"
          "  --workload w2    contended: N contenders on PREFIX:w2 (acquire, hold, release)\n"
          "  --baseline       raw hiredis EVALSHA of the same scripts (W2: 1 ms retry poll)\n"
          "  --variant NAME   label for the run (default: rlk, or baseline)\n"
          "  --host HOST      loopback only: localhost, 127.0.0.0/8 or ::1 (default 127.0.0.1)\n"
          "  --key-prefix P   every key used starts with P (default rlk-bench)\n"
          "  --hold-ms MS     W2 hold time, slept (default 1)\n"
          "  --events-out F   W2: a header line starting with '#', then one line per\n"
          "                   acquisition, contender,request_ns,acquire_ns,release_ns\n"
          "                   (absolute CLOCK_MONOTONIC ns: files of several processes merge)\n"
          "  --grace S        waiters still blocked S seconds after the deadline are\n"
          "                   abandoned and reported as stuck (default 3)\n"
          "  --scripts-dir D  baseline: read <D>/reentrant/{acquire,release}.lua instead of\n"
          "                   the library's embedded copies\n"
          "  --procs          one process per contender (W2) or client (W1), each with its\n"
          "                   own connection or rlk_client, started together (default: threads\n"
          "                   of one process)\n"
          "  --lock KIND      W2 (and W1 with --w1-lock), rlk variant: reentrant (rlk_lock,\n"
          "                   default) or fair\n"
          "                   (rlk_fairlock); --baseline: setnx (SET NX PX, compare-and-\n"
          "                   delete: the server's floor for a lock pair)\n"
          "                   rlk: rwlock-write (the write side), semaphore or\n"
          "                   psemaphore (1 permit each, used as a mutex); spin (the\n"
          "                   reentrant lock waiting by back-off, 1..128 ms, no pub/sub);\n"
          "                   fastmulti (Redisson's faster MultiLock: --names values of one\n"
          "                   group hash, one script call) or multilock (rlk's MultiLock of\n"
          "                   --names reentrant locks on the one server)\n"
          "  --tls            every connection over TLS (rediss:// for the library, the\n"
          "                   library's TLS transport for the baseline), certificate checked\n"
          "  --cacert F       the CA of the server's certificate (default: the system store)\n"
          "  --cert F --key F a client certificate, for servers with tls-auth-clients yes\n"
          "  --metrics-out F  rlk variant: at the end, the library's metrics in Prometheus\n"
          "                   text format, one snapshot per contender's client labelled\n"
          "                   process=\"<i>\" (--procs) or contender=\"<i>\" (threads)\n"
          "  --no-metrics     rlk variant: turn the library's metric recording off\n"
          "                   (rlk_metrics_set_enabled), to measure what it costs\n"
          "  --api API        rlk variant: blocking (default: a thread, or a process, per\n"
          "                   contender) or async (rlk_async.h: one thread, one poll loop\n"
          "                   driving every contender as a task; --procs: one async client\n"
          "                   per process)\n"
          "  --w1-lock        W1 through the lock calls (rlk_lock_try_lock with wait 0, then\n"
          "                   rlk_lock_unlock) instead of rlk_evalv of the two scripts;\n"
          "                   with --lock KIND the kind's try_lock / try_acquire (wait 0)\n"
          "                   and unlock / release; --api async always goes through the\n"
          "                   lock calls\n"
          "  --watchdog       W1 through the lock calls with a watchdog lease (lease -1: the\n"
          "                   client's watchdog_lease_ms, 30 s, renewed by its watchdog\n"
          "                   until unlock) instead of a fixed 30000 ms lease\n"
          "  --workload pending  N lock requests on M names (PREFIX:pending:<j>), each name\n"
          "                   held by a foreign holder (a blocking client in a child process)\n"
          "                   until all are pending, then released; every request served\n"
          "                   (acquire, release at once). Reports served, overlaps,\n"
          "                   rss_bytes_per_request, fds at the peak. --api async: one\n"
          "                   thread; --api blocking: a thread per request (128 KiB stacks)\n"
          "  --requests N     pending: the number of requests (1..1000000)\n"
          "  --names M        pending: the number of names (1..N); W2 with --lock fastmulti|\n"
          "                   multilock: the names every acquisition takes (default 10)\n"
          "\n"
          "Prints one JSON object (schema peers-bench/1) as the last line of stdout.\n"
          "Exit: 0 run completed, 1 setup failed (connect, scripts), 2 usage.\n", f);
}

static int rlk_bench_parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int rlk_bench_parse_seconds(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int rlk_bench_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (strcmp(host, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
    return 0;
}

static void rlk_bench_defaults(rlk_bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->key_prefix = "rlk-bench";
    o->hold_ms = 1;
    o->grace_s = 3.0;
    o->ready_fd = -1;
    o->gate_fd = -1;
}

/* One "--name value" option. Returns 0, or -1 with err. */
static int rlk_bench_option(rlk_bench_opts *o, const char *name, const char *val,
                            char *err, size_t errlen)
{
    int bad = 0;

    if (strcmp(name, "--workload") == 0) {
        o->workload = strcmp(val, "w1") == 0 ? 1 : strcmp(val, "w2") == 0 ? 2
                      : strcmp(val, "pending") == 0 ? 3 : 0;
        bad = o->workload == 0;
    } else if (strcmp(name, "--api") == 0) {
        o->api_async = strcmp(val, "async") == 0;
        bad = !o->api_async && strcmp(val, "blocking") != 0;
    } else if (strcmp(name, "--requests") == 0) {
        bad = rlk_bench_parse_int(val, 1, RLK_BENCH_MAX_PENDING, &o->requests);
    } else if (strcmp(name, "--names") == 0) {
        bad = rlk_bench_parse_int(val, 1, RLK_BENCH_MAX_PENDING, &o->names);
    } else if (strcmp(name, "--clients") == 0) {
        bad = rlk_bench_parse_int(val, 1, RLK_BENCH_MAX_CLIENTS, &o->clients);
    } else if (strcmp(name, "--duration") == 0) {
        bad = rlk_bench_parse_seconds(val, 0.001, 86400, &o->duration_s);
    } else if (strcmp(name, "--grace") == 0) {
        bad = rlk_bench_parse_seconds(val, 0, 3600, &o->grace_s);
    } else if (strcmp(name, "--port") == 0) {
        bad = rlk_bench_parse_int(val, 1, 65535, &o->port);
    } else if (strcmp(name, "--hold-ms") == 0) {
        bad = rlk_bench_parse_int(val, 0, 60000, &o->hold_ms);
    } else if (strcmp(name, "--variant") == 0) {
        o->variant = val;
    } else if (strcmp(name, "--host") == 0) {
        o->host = val;
    } else if (strcmp(name, "--key-prefix") == 0) {
        o->key_prefix = val;
    } else if (strcmp(name, "--events-out") == 0) {
        o->events_out = val;
    } else if (strcmp(name, "--metrics-out") == 0) {
        o->metrics_out = val;
    } else if (strcmp(name, "--lock") == 0) {
        o->fair = strcmp(val, "fair") == 0;
        o->spin = strcmp(val, "spin") == 0;
        o->setnx = strcmp(val, "setnx") == 0;
        o->kind = rlk_bench_kind_parse(val);
        bad = !o->fair && !o->spin && !o->setnx && !o->kind && strcmp(val, "reentrant") != 0;
    } else if (strcmp(name, "--scripts-dir") == 0) {
        o->scripts_dir = val;
    } else if (strcmp(name, "--cacert") == 0) {
        o->cacert = val;
    } else if (strcmp(name, "--cert") == 0) {
        o->cert = val;
    } else if (strcmp(name, "--key") == 0) {
        o->key = val;
    } else {
        snprintf(err, errlen, "unknown option %s", name);
        return -1;
    }
    if (bad) {
        snprintf(err, errlen, "bad value for %s: '%s'", name, val);
        return -1;
    }
    return 0;
}

static int rlk_bench_check(rlk_bench_opts *o, char *err, size_t errlen)
{
    if (o->workload == 3) {
        if (o->requests == 0 || o->names == 0 || o->port == 0) {
            snprintf(err, errlen, "--workload pending needs --requests, --names and --port");
            return -1;
        }
        if (o->names > o->requests) {
            snprintf(err, errlen, "--names (%d) must not exceed --requests (%d)", o->names,
                     o->requests);
            return -1;
        }
        if (o->clients != 0 || o->duration_s != 0 || o->procs || o->baseline) {
            snprintf(err, errlen, "--workload pending takes no --clients, --duration, --procs "
                     "or --baseline");
            return -1;
        }
        o->clients = 1;
        o->duration_s = 1;
    } else if (o->requests != 0 || (o->names != 0 && !rlk_bench_kind_many(o->kind))) {
        snprintf(err, errlen, "--requests and --names go with --workload pending (--names also "
                 "with --lock fastmulti|multilock)");
        return -1;
    } else if (rlk_bench_kind_many(o->kind) && o->names == 0) {
        o->names = 10;
    }
    if (o->api_async && o->baseline) {
        snprintf(err, errlen, "--api applies to the rlk variant, not --baseline");
        return -1;
    }
    if (o->w1_lock && o->baseline) {
        snprintf(err, errlen, "--w1-lock applies to the rlk variant, not --baseline");
        return -1;
    }
    if (o->api_async)
        o->w1_lock = 1;
    if (o->watchdog && (o->baseline || !o->w1_lock || o->workload != 1)) {
        snprintf(err, errlen, "--watchdog applies to W1 through the lock calls (--w1-lock or "
                              "--api async), not to --baseline or W2");
        return -1;
    }
    if (o->workload == 0 || o->clients == 0 || o->duration_s == 0 || o->port == 0) {
        snprintf(err, errlen, "--workload, --clients, --duration and --port are required");
        return -1;
    }
    if (!rlk_bench_is_loopback(o->host)) {
        snprintf(err, errlen, "refusing host '%s': rlk-bench connects to loopback only "
                 "(localhost, 127.0.0.0/8, ::1)", o->host);
        return -1;
    }
    if (!o->tls && (o->cacert || o->cert || o->key)) {
        snprintf(err, errlen, "--cacert, --cert and --key go with --tls");
        return -1;
    }
    if (!o->cert != !o->key) {
        snprintf(err, errlen, "--cert and --key go together");
        return -1;
    }
    if (o->key_prefix[0] == '\0' || strlen(o->key_prefix) > 200) {
        snprintf(err, errlen, "--key-prefix must be 1..200 bytes");
        return -1;
    }
    if (o->variant != NULL && (o->variant[0] == '\0' || strlen(o->variant) > 100)) {
        snprintf(err, errlen, "--variant must be 1..100 bytes");
        return -1;
    }
    return 0;
}

int rlk_bench_parse_opts(int argc, char **argv, rlk_bench_opts *o, char *err, size_t errlen)
{
    int i;

    rlk_bench_defaults(o);
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        char name[64];

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return 1;
        if (strcmp(arg, "--baseline") == 0) {
            o->baseline = 1;
            continue;
        }
        if (strcmp(arg, "--procs") == 0) {
            o->procs = 1;
            continue;
        }
        if (strcmp(arg, "--tls") == 0) {
            o->tls = 1;
            continue;
        }
        if (strcmp(arg, "--no-metrics") == 0) {
            o->no_metrics = 1;
            continue;
        }
        if (strcmp(arg, "--w1-lock") == 0) {
            o->w1_lock = 1;
            continue;
        }
        if (strcmp(arg, "--watchdog") == 0) {
            o->watchdog = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s'", arg);
            return -1;
        }
        if (eq == NULL) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "%s needs a value", arg);
                return -1;
            }
            if (rlk_bench_option(o, arg, argv[++i], err, errlen) != 0)
                return -1;
            continue;
        }
        if ((size_t)(eq - arg) >= sizeof name) {
            snprintf(err, errlen, "unknown option %s", arg);
            return -1;
        }
        memcpy(name, arg, (size_t)(eq - arg));
        name[eq - arg] = '\0';
        if (rlk_bench_option(o, name, eq + 1, err, errlen) != 0)
            return -1;
    }
    return rlk_bench_check(o, err, errlen);
}
