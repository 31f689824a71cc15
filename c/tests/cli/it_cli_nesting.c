/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_nesting.c - every command that holds something, run by the command of every other
 * (and of itself) on the same name: the inner rlk re-enters its parent's hold where the kind
 * allows it, and is otherwise refused at once (exit 2, one line on stderr), never waiting for
 * its own parent.
 *
 * The commands: rlk lock (reentrant), --spin, --read, --write, --fair, --fenced,
 * --non-reentrant, --fair --non-reentrant, --all (two members, the first the shared name),
 * --redlock (three servers, the first the one the others use), rlk fastmulti (the name as the
 * group), rlk semaphore (one permit) and rlk elect. For each outer command, its 13 pairs run
 * side by side, each on a name of its own: the outer's command runs the inner rlk with
 * `-- true` and records its exit code and stderr. A nested rlk that waits (for its parent, which
 * waits for it) is caught by the row's deadline: the outer rlk is killed (and its command group
 * with it) and the pair fails, naming both commands.
 *
 * Re-entry (exit 0): the reentrant lock, --spin and --all among themselves (one holder id, the
 * reentrant lock's hash: --all's members are reentrant locks), --read/--write (but a reader
 * asking for the write lock: refused), --fair, --fenced, fastmulti. Refused (exit 2): every
 * other pair: two kinds on one name, the non-reentrant kinds asking again, a second campaign
 * in an election its parent leads, a RedLock asking again, a semaphore whose permits its
 * parent holds.
 *
 * Also: each command's RLK_LOCK_KIND and RLK_LOCK_NAME as its command sees them, and every
 * hold released after (the name's key gone, but the semaphore's count).
 *
 * Usage: it_cli_nesting PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <signal.h>
#include <unistd.h>

#define NSERVERS 3
#define ROW_DEADLINE_MS 20000   /* a refusal or a re-entry takes milliseconds; a wait, for ever */

static rlk_fx_server srv[NSERVERS];
static char urls[NSERVERS][128];
static char redlock_urls[3 * 128 + 4];

enum fam { NF_LOCK, NF_RW, NF_FAIR, NF_NRFAIR, NF_FENCED, NF_NR, NF_FM, NF_SEM, NF_ELECT, NF_REDLOCK };

typedef struct nest_cmd {
    const char *label;          /* for messages */
    const char *args;           /* the rlk arguments before "--"; %1$s: the name */
    const char *kind;           /* its RLK_LOCK_KIND */
    int multi;                  /* --all: RLK_LOCK_NAME is "NAME NAME.b" */
    enum fam fam;
} nest_cmd;

static const nest_cmd cmds[] = {
    {"lock", "lock %1$s", "lock", 0, NF_LOCK},
    {"lock --spin", "lock --spin %1$s", "lock", 0, NF_LOCK},
    {"lock --read", "lock --read %1$s", "read", 0, NF_RW},
    {"lock --write", "lock --write %1$s", "write", 0, NF_RW},
    {"lock --fair", "lock --fair %1$s", "fair", 0, NF_FAIR},
    {"lock --fenced", "lock --fenced %1$s", "fenced", 0, NF_FENCED},
    {"lock --non-reentrant", "lock --non-reentrant %1$s", "nonreentrant", 0, NF_NR},
    {"lock --fair --non-reentrant", "lock --fair --non-reentrant %1$s", "nonreentrantfair", 0,
     NF_NRFAIR},
    {"lock --all", "lock --all %1$s %1$s.b", "multi", 1, NF_LOCK},
    {"lock --redlock", "lock --redlock %2$s %1$s", "redlock", 0, NF_REDLOCK},
    {"fastmulti", "fastmulti %1$s v1", "fastmulti", 0, NF_FM},
    {"semaphore", "semaphore %1$s --permits 1", "semaphore", 0, NF_SEM},
    {"elect", "elect %1$s", "elect", 0, NF_ELECT},
};
#define NCMDS ((int)(sizeof cmds / sizeof cmds[0]))

/* 1: the inner re-enters its parent's hold (exit 0); 0: refused (exit 2). */
static int expect_reentry(const nest_cmd *outer, const nest_cmd *inner)
{
    if (outer->fam != inner->fam)
        return 0;
    switch (outer->fam) {
    case NF_LOCK:
    case NF_FAIR:
    case NF_FENCED:
    case NF_FM:
        return 1;
    case NF_RW:      /* a reader cannot upgrade */
        return !(strcmp(outer->kind, "read") == 0 && strcmp(inner->kind, "write") == 0);
    default:
        return 0;
    }
}

static void pair_name(char *buf, size_t len, int o, int i)
{
    snprintf(buf, len, "nest%d_%d", o, i);
}

/* The outer command's script: records its kind and name, runs the inner rlk on the same name
 * (stderr to a file), records the inner's exit code. */
static void pair_script(char *buf, size_t len, int o, int i)
{
    char name[64], inner[600], tag[32];

    pair_name(name, sizeof name, o, i);
    snprintf(tag, sizeof tag, "%d_%d", o, i);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(inner, sizeof inner, cmds[i].args, name, redlock_urls);
#pragma GCC diagnostic pop
    snprintf(buf, len,
             "printf '%%s|%%s\\n' \"$RLK_LOCK_KIND\" \"$RLK_LOCK_NAME\" > \"$T/env.%s\"; "
             "\"$RLK_BIN\" %s -- true 2> \"$T/err.%s\"; echo $? > \"$T/rc.%s\"",
             tag, inner, tag, tag);
}

/* The outer rlk's argv (split at spaces: no argument has one). */
static int outer_argv(const char **argv, char *words, size_t len, int o, int i, const char *script)
{
    char name[64];
    int n = 0;

    pair_name(name, sizeof name, o, i);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(words, len, cmds[o].args, name, redlock_urls);
#pragma GCC diagnostic pop
    for (char *w = strtok(words, " "); w && n < 12; w = strtok(NULL, " "))
        argv[n++] = w;
    argv[n++] = "--";
    argv[n++] = "sh";
    argv[n++] = "-c";
    argv[n++] = script;
    argv[n] = NULL;
    return n;
}

/* The content of $T/<what>.<tag> ("" when missing). */
static char *pair_file(const char *what, const char *tag)
{
    char file[64];

    snprintf(file, sizeof file, "%s.%s", what, tag);
    return cli_slurp(cli_path(file));
}

static void check_pair(int o, int i, const cli_result *r)
{
    char tag[32], what[200], name[64], want_env[200];
    char *rc, *err, *env;
    int want = expect_reentry(&cmds[o], &cmds[i]) ? 0 : 2;

    snprintf(tag, sizeof tag, "%d_%d", o, i);
    pair_name(name, sizeof name, o, i);
    snprintf(what, sizeof what, "rlk %s X -- rlk %s X", cmds[o].label, cmds[i].label);
    if (!CHECKF(r->status == 0, "%s: the outer rlk exit %d after %lld ms (%s)\n    stderr: %s",
                what, r->status, r->ms, r->status == -1 ? "still running at the deadline: the "
                "nested rlk waited for its own parent" : "expected 0", r->err))
        return;
    rc = pair_file("rc", tag);
    err = pair_file("err", tag);
    env = pair_file("env", tag);
    CHECKF(atoi(rc) == want && rc[0] != '\0', "%s: the nested rlk exit %s, expected %d (%s)\n"
           "    its stderr: %s", what, rc[0] ? rc : "(none)", want, want ? "refused" : "re-entered",
           err);
    if (want == 2) {
        const char *nl = strchr(err, '\n');

        CHECKF(strncmp(err, "rlk: ", 5) == 0 && strstr(err, "refused") && nl && nl[1] == '\0',
               "%s: the refusal is not one line \"rlk: ... refused ...\": %s", what, err);
    }
    snprintf(want_env, sizeof want_env, "%s|%s%s%s%s\n", cmds[o].kind, name,
             cmds[o].multi ? " " : "", cmds[o].multi ? name : "", cmds[o].multi ? ".b" : "");
    CHECKF(strcmp(env, want_env) == 0, "%s: the command of rlk %s saw RLK_LOCK_KIND|NAME %s, "
           "expected %s", what, cmds[o].label, env, want_env);
    if (cmds[o].fam != NF_SEM)
        CHECKF(tk_int(&srv[0], "EXISTS %s", name) == 0, "%s: %s is left after the outer rlk "
               "ended", what, name);
    free(rc);
    free(err);
    free(env);
}

/* One outer command with every inner one, side by side. */
static void nest_row(int o)
{
    char scripts[NCMDS][1200], words[NCMDS][600];
    const char *argv[NCMDS][20];
    long long start = rlk_fx_now_ms(), t0[NCMDS];
    cli_proc p[NCMDS];
    int started[NCMDS];

    for (int i = 0; i < NCMDS; i++) {
        pair_script(scripts[i], sizeof scripts[i], o, i);
        outer_argv(argv[i], words[i], sizeof words[i], o, i, scripts[i]);
        t0[i] = rlk_fx_now_ms();
        started[i] = cli_start(&p[i], argv[i]) == 0;
        CHECKF(started[i], "rlk %s: could not start", cmds[o].label);
    }
    for (int i = 0; i < NCMDS; i++) {
        long left = (long)(start + ROW_DEADLINE_MS - rlk_fx_now_ms());
        cli_result r;
        int st;

        if (!started[i])
            continue;
        st = cli_wait(&p[i], left > 1 ? left : 1);
        r = cli_collect(&p[i], st, rlk_fx_now_ms() - t0[i]);
        check_pair(o, i, &r);
        cli_result_free(&r);
    }
}

#define NEST_ROW(o, fn) static void fn(void) { nest_row(o); }
NEST_ROW(0, test_nested_in_lock)
NEST_ROW(1, test_nested_in_spin)
NEST_ROW(2, test_nested_in_read)
NEST_ROW(3, test_nested_in_write)
NEST_ROW(4, test_nested_in_fair)
NEST_ROW(5, test_nested_in_fenced)
NEST_ROW(6, test_nested_in_nonreentrant)
NEST_ROW(7, test_nested_in_fair_nonreentrant)
NEST_ROW(8, test_nested_in_all)
NEST_ROW(9, test_nested_in_redlock)
NEST_ROW(10, test_nested_in_fastmulti)
NEST_ROW(11, test_nested_in_semaphore)
NEST_ROW(12, test_nested_in_elect)

/* A semaphore with room beside its parent's permits: the nested rlk takes one of its own. */
static void test_semaphore_room_beside_parent(void)
{
    cli_result r = RUN("semaphore", "nest-sem2", "--permits", "2", "--", "sh", "-c",
                       "\"$RLK_BIN\" semaphore nest-sem2 --permits 2 -n -- true");

    expect_status(&r, 0, "semaphore of 2 permits, nested");
    cli_result_free(&r);
    r = RUN("semaphore", "nest-sem3", "--permits", "2", "--", "sh", "-c",
            "\"$RLK_BIN\" semaphore nest-sem3 --permits 2 --take 2 -- true");
    expect_status(&r, 2, "semaphore of 2 permits, nested --take 2");
    expect_one_line_error(&r, "semaphore of 2 permits, nested --take 2");
    CHECK_STR_CONTAINS(r.err, "refused");
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, srv, NSERVERS, urls[0], sizeof urls[0]);

    if (rc >= 0)
        return rc;
    snprintf(redlock_urls, sizeof redlock_urls, "%s,%s,%s", urls[0], urls[1], urls[2]);
    RUN_TEST(test_nested_in_lock);
    RUN_TEST(test_nested_in_spin);
    RUN_TEST(test_nested_in_read);
    RUN_TEST(test_nested_in_write);
    RUN_TEST(test_nested_in_fair);
    RUN_TEST(test_nested_in_fenced);
    RUN_TEST(test_nested_in_nonreentrant);
    RUN_TEST(test_nested_in_fair_nonreentrant);
    RUN_TEST(test_nested_in_all);
    RUN_TEST(test_nested_in_redlock);
    RUN_TEST(test_nested_in_fastmulti);
    RUN_TEST(test_nested_in_semaphore);
    RUN_TEST(test_nested_in_elect);
    RUN_TEST(test_semaphore_room_beside_parent);
    cli_main_end(srv, NSERVERS);
    return check_summary("it_cli_nesting");
}
