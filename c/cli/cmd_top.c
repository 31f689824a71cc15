/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_top.c - rlk top [--once] [--json] [--pattern P] [--interval S] ...
 *
 * The command: its options, the connections to every master, the refresh
 * loop and the terminal (the alternate screen, keys, resizes). What a refresh
 * reads and how it is shown: top.h.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "help_gen.h"
#include "client/client.h"
#include "client/conn.h"
#include "client/topo.h"
#include "client/transport.h"
#include "top.h"


const char *const rlk_top_sort_words[RLK_TOP_SORTS] = {"waiters", "age", "name"};

volatile sig_atomic_t rlk_top_stop;

static void top_on_signal(int sig)
{
    (void)sig;
    rlk_top_stop = 1;
}
/* ---------------------------------------------------------------- the terminal */

static struct termios top_saved_tio;
static int top_raw, top_alt;
static volatile sig_atomic_t top_resized;

static void top_on_winch(int sig)
{
    (void)sig;
    top_resized = 1;
}

/* Back to the normal screen (the view leaves nothing behind, as top and htop) and the
 * terminal's own mode. */
static void top_tty_restore(void)
{
    if (top_alt) {
        fputs("\033[?1049l", stdout);     /* rmcup */
        fflush(stdout);
        top_alt = 0;
    }
    if (top_raw) {
        tcsetattr(STDIN_FILENO, TCSANOW, &top_saved_tio);
        top_raw = 0;
    }
}

/* The alternate screen (smcup), keys without echo, redraw on SIGWINCH. */
static void top_tty_raw(void)
{
    struct sigaction sa;
    struct termios t;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = top_on_winch;   /* no SA_RESTART: the wait's poll returns at once */
    sigaction(SIGWINCH, &sa, NULL);
    fputs("\033[?1049h", stdout);
    fflush(stdout);
    top_alt = 1;
    atexit(top_tty_restore);
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &top_saved_tio) != 0)
        return;
    t = top_saved_tio;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
        top_raw = 1;
}

/* Waits until end_ns for a key; handles it. 0: refresh, 1: quit, 2: the terminal was
 * resized (redraw, then wait on). */
static int top_wait_key(rlk_top_state *s, long long end_ns)
{
    while (!rlk_top_stop) {
        long long left = (end_ns - rlk_lc_now_ns()) / 1000000LL;
        struct pollfd p = {STDIN_FILENO, POLLIN, 0};
        char ch;
        int got;

        if (top_resized) {
            top_resized = 0;
            return 2;
        }
        if (left <= 0)
            return 0;
        got = poll(&p, top_raw ? 1 : 0, (int)left);
        if (got <= 0)
            continue;
        if (read(STDIN_FILENO, &ch, 1) != 1)
            return 0;
        if (ch == 'q' || ch == 'Q')
            return 1;
        if (ch == 's' || ch == 'S') {
            s->o.sort = (s->o.sort + 1) % RLK_TOP_SORTS;
            return 0;   /* refresh now, in the new order */
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- parsing, main */

static int top_int_opt(int argc, char **argv, int *i, const char *name, long long lo,
                       long long hi, long long *out, int *got)
{
    const char *v;
    char *end;
    int g = rlk_cli_opt_value("top", argc, argv, i, name, &v);

    if (g <= 0)
        return g;
    *got = 1;
    *out = strtoll(v, &end, 10);
    if (end == v || *end || *out < lo || *out > hi) {
        rlk_cli_usage("top", "%s: a whole number from %lld to %lld, not '%s'", name, lo, hi, v);
        return -1;
    }
    return 1;
}

static int top_parse(int argc, char **argv, rlk_top_opts *o)
{
    for (int i = 1; i < argc;) {
        const char *v = NULL;
        long long n = 0;
        int got = rlk_cli_opt_value("top", argc, argv, &i, "--url", &o->url), set = 0;

        if (got == 0 && (got = rlk_cli_opt_value("top", argc, argv, &i, "--pattern", &v)) > 0) {
            if (!v[0])
                return rlk_cli_usage("top", "--pattern must not be empty");
            o->pattern = v;
        }
        if (got == 0 && (got = rlk_cli_opt_value("top", argc, argv, &i, "--interval", &v)) > 0 &&
            rlk_lc_parse_seconds("top", "--interval", v, &o->interval_ms) != 0)
            return RLK_EXIT_USAGE;
        if (got == 0 && (got = rlk_cli_opt_value("top", argc, argv, &i, "--sort", &v)) > 0) {
            o->sort = 0;
            while (o->sort < RLK_TOP_SORTS && strcmp(rlk_top_sort_words[o->sort], v) != 0)
                o->sort++;
            if (o->sort == RLK_TOP_SORTS)
                return rlk_cli_usage("top", "--sort: waiters, age or name, not '%s'", v);
        }
        if (got == 0 && (got = top_int_opt(argc, argv, &i, "--limit", 1, 1000000, &n, &set)) > 0)
            o->limit = (int)n;
        if (got == 0 && (got = top_int_opt(argc, argv, &i, "--count", 10, 10000, &n, &set)) > 0)
            o->count = (int)n;
        if (got == 0 && (got = top_int_opt(argc, argv, &i, "--rate", 1, 100000, &n, &set)) > 0)
            o->rate = (int)n;
        if (got == 0)
            got = rlk_cli_global_opt("top", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(rlk_cli_help_top, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--once") == 0)
            o->once = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_unknown_option("top", argv[i]);
        else
            return rlk_cli_usage("top", "unexpected argument '%s'", argv[i]);
        i++;
    }
    if (o->interval_ms < 100)
        return rlk_cli_usage("top", "--interval: at least 0.1 s");
    return -1;
}

static int top_connect_nodes(rlk_top_state *s)
{
    rlk_client *m[RLK_TOP_NODES_MAX];
    int n = rlk_topo_masters(s->c, m, RLK_TOP_NODES_MAX), rc;

    if (n <= 0) {
        snprintf(s->err, sizeof s->err, "no cluster master known");
        return RLK_ERR_IO;
    }
    for (int i = 0; i < n; i++) {
        if ((rc = rlk_conn_open(m[i], &s->nodes[i].ctx)) != RLK_OK) {
            snprintf(s->err, sizeof s->err, "%s", rlk_errstr(m[i]));
            return rc;
        }
        snprintf(s->nodes[i].addr, sizeof s->nodes[i].addr, "%s", m[i]->addr);
        s->nnodes = i + 1;
    }
    return RLK_OK;
}

static int top_run(int argc, char **argv)
{
    static rlk_top_state s;
    int rc, code, tty, limit_given;
    struct sigaction sa;

    memset(&s, 0, sizeof s);
    s.o.pattern = "*";
    s.o.interval_ms = 2000;
    s.o.count = 1000;
    s.o.rate = 1000;
    if ((rc = top_parse(argc, argv, &s.o)) >= 0)
        return rc;
    tty = isatty(STDOUT_FILENO) && !s.o.json && !s.o.once;
    limit_given = s.o.limit != 0;
    if (!s.o.limit) {
        struct winsize w;

        s.o.limit = s.o.json ? 100 : 50;
        if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 8)
            s.o.limit = w.ws_row - 7;
    }
    if (!(s.c = rlk_cli_connect(s.o.url, NULL, 1, &code)))
        return code;
    if ((rc = top_connect_nodes(&s)) != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "top: %s", s.err);
        goto out;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = top_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (tty)
        top_tty_raw();
    code = RLK_EXIT_OK;
    while (!rlk_top_stop) {
        rlk_top_row **rows;
        size_t n;
        long long next_ns = rlk_lc_now_ns() + s.o.interval_ms * 1000000LL;
        int k = 0;

        rc = rlk_top_refresh(&s, &rows, &n);
        rlk_waitgraph_free(s.wg);
        s.wg = rc == RLK_OK ? rlk_top_waits_read(s.c, rows, n) : NULL;
        if (rc == RLK_ERR_INTERRUPTED)
            break;
        if (rc != RLK_OK) {
            top_tty_restore();
            code = rlk_cli_fail(rlk_cli_exit_code(rc), "top: %s", s.err[0] ? s.err : "failed");
            break;
        }
        do {
            if (k == 2 && tty && !limit_given) {
                struct winsize w;

                if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 8)
                    s.o.limit = w.ws_row - 7;
            }
            if (s.o.json)
                rlk_top_print_json(&s, rows, n);
            else
                rlk_top_print_text(&s, rows, n, tty);
        } while (!s.o.once && (k = top_wait_key(&s, next_ns)) == 2);
        free(rows);
        if (s.o.once || k == 1)
            break;
    }
    top_tty_restore();
out:
    rlk_waitgraph_free(s.wg);
    rlk_top_table_free(&s.t);
    rlk_top_table_free(&s.old);
    for (int i = 0; i < s.nnodes; i++)
        rlk_transport_free(s.nodes[i].ctx);
    rlk_free(s.c);
    return code;
}

const rlk_cli_command rlk_cmd_top = {
    "top",
    "a live view of the server's locks, waiters and semaphores (rlk top [--once] [--json])",
    rlk_cli_help_top,
    top_run,
};
