/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli_run.c - see cli_run.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_run.h"

#include "fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *run_rlk;
static char run_url[256];
static int run_no_url;      /* cli_set_url(NULL): rlk starts with no RLK_URL at all */
static char run_dir[] = "/tmp/rlk-cli-it-XXXXXX";
static int run_dir_made;
static unsigned run_seq;

int cli_setup(const char *rlk_path, const char *url)
{
    run_rlk = rlk_path;
    snprintf(run_url, sizeof run_url, "%s", url);
    if (!mkdtemp(run_dir)) {
        perror("mkdtemp");
        return -1;
    }
    run_dir_made = 1;
    return 0;
}

void cli_set_url(const char *url)
{
    run_no_url = url == NULL;
    snprintf(run_url, sizeof run_url, "%s", url ? url : "");
}

void cli_teardown(void)
{
    DIR *d;
    struct dirent *e;

    if (!run_dir_made || !(d = opendir(run_dir)))
        return;
    while ((e = readdir(d)) != NULL) {
        char path[600];

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(run_dir);
    run_dir_made = 0;
}

const char *cli_dir(void)
{
    return run_dir;
}

const char *cli_path(const char *name)
{
    static char bufs[8][400];
    static unsigned next;
    char *b = bufs[next++ % 8];

    snprintf(b, sizeof bufs[0], "%s/%s", run_dir, name);
    return b;
}

/* ---------------------------------------------------------------- running */

static void run_child(char *const argv[], const cli_proc *p)
{
    int fo = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fi = open("/dev/null", O_RDONLY);

    if (fo < 0 || fe < 0 || fi < 0)
        _exit(126);
    /* A process group of its own: a run that has to be killed takes its
     * command along (kill(-pid)). */
    setpgid(0, 0);
    dup2(fi, STDIN_FILENO);
    dup2(fo, STDOUT_FILENO);
    dup2(fe, STDERR_FILENO);
    /* Nothing of the test (its Redis sockets) leaks into rlk: rlk passes on
     * what it inherits. */
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    execv(run_rlk, argv);
    _exit(127);
}

/* The child's environment: ours with RLK_URL (none when url is NULL), RLK_BIN and T replaced. */
static char **run_env(char *url, char *bin, char *dir)
{
    extern char **environ;
    size_t n = 0, k = 0;
    char **env;

    while (environ[n])
        n++;
    env = calloc(n + 4, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "RLK_URL=", 8) != 0 && strncmp(environ[i], "RLK_BIN=", 8) != 0 &&
            strncmp(environ[i], "T=", 2) != 0 && strncmp(environ[i], "RLK_LOCK_", 9) != 0)
            env[k++] = environ[i];
    if (url)
        env[k++] = url;
    env[k++] = bin;
    env[k++] = dir;
    env[k] = NULL;
    return env;
}

int cli_start(cli_proc *p, const char *const *args)
{
    char *argv[40];
    char url[300], bin[400], dir[300];
    char **env;
    int n = 0;

    argv[n++] = (char *)run_rlk;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    run_seq++;
    snprintf(p->out_path, sizeof p->out_path, "%s/out.%u", run_dir, run_seq);
    snprintf(p->err_path, sizeof p->err_path, "%s/err.%u", run_dir, run_seq);
    snprintf(url, sizeof url, "RLK_URL=%s", run_url);
    snprintf(bin, sizeof bin, "RLK_BIN=%s", run_rlk);
    snprintf(dir, sizeof dir, "T=%s", run_dir);
    if (!(env = run_env(run_no_url ? NULL : url, bin, dir)))
        return -1;
    fflush(NULL);
    p->pid = fork();
    if (p->pid == 0) {
        extern char **environ;

        environ = env;
        run_child(argv, p);
    }
    free(env);
    return p->pid > 0 ? 0 : -1;
}

int cli_wait(cli_proc *p, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;
    int status;
    pid_t r;

    while ((r = waitpid(p->pid, &status, WNOHANG)) == 0) {
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "  rlk (pid %d) did not finish in %ld ms; killed\n", (int)p->pid,
                    timeout_ms);
            kill(-p->pid, SIGKILL);
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            return -1;
        }
        rlk_fx_sleep_ms(2);
    }
    if (r < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

cli_result cli_collect(cli_proc *p, int status, long long ms)
{
    cli_result r;

    r.status = status;
    r.ms = ms;
    r.out = cli_slurp(p->out_path);
    r.err = cli_slurp(p->err_path);
    unlink(p->out_path);
    unlink(p->err_path);
    return r;
}

cli_result cli_run(const char *const *args)
{
    cli_proc p;
    long long start = rlk_fx_now_ms();
    int status = -1;

    if (cli_start(&p, args) == 0)
        status = cli_wait(&p, CLI_TIMEOUT_MS);
    return cli_collect(&p, status, rlk_fx_now_ms() - start);
}

void cli_result_free(cli_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* ---------------------------------------------------------------- files */

static char *run_empty(void)
{
    char *s = strdup("");

    if (!s)
        abort();
    return s;
}

char *cli_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];

    if (!f)
        return run_empty();
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            char *grown = realloc(buf, (cap = (len + n + 1) * 2));

            if (!grown)
                break;
            buf = grown;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf)
        return run_empty();
    buf[len] = '\0';
    return buf;
}

int cli_wait_file(const char *path, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (access(path, F_OK) != 0) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

int cli_wait_contains(const char *path, const char *text, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    for (;;) {
        char *s = cli_slurp(path);
        int hit = strstr(s, text) != NULL;

        free(s);
        if (hit)
            return 0;
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(5);
    }
}

int cli_count_lines(const char *path, const char *prefix)
{
    char *s = cli_slurp(path), *line = s;
    int n = 0;

    while (*line) {
        char *nl = strchr(line, '\n');

        if (strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
        if (!nl)
            break;
        line = nl + 1;
    }
    free(s);
    return n;
}

/* ---------------------------------------------------------------- hold logs */

static const char *cli_self(void)
{
    static char self[512];

    if (!self[0]) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

        self[n > 0 ? n : 0] = '\0';
    }
    return self;
}

void cli_hold_script(char *buf, size_t len, const char *log, char kind, const char *value,
                     const char *hold)
{
    snprintf(buf, len, "'%s' --tk-hold %s %c begin $$ %s; %s; '%s' --tk-hold %s %c end $$",
             cli_self(), log, kind, value ? value : "", hold, cli_self(), log, kind);
}

void cli_hold_barrier(char *buf, size_t len, const char *log, int n)
{
    snprintf(buf, len, "n=0; while [ \"$(grep -c '^B ' %s)\" -lt %d ] && [ $n -lt 1000 ]; "
             "do sleep 0.01; n=$((n+1)); done", log, n);
}

tk_hold_report cli_holds_check(const char *log, int *bad)
{
    const char *paths[1] = {log};
    tk_hold *holds = NULL;
    tk_hold_report rep;
    size_t n = 0;

    *bad = 0;
    tk_holds_read(paths, 1, -1, &holds, &n, bad);
    rep = tk_holds_check(holds, n, 1);
    free(holds);
    return rep;
}

/* ---------------------------------------------------------------- main */

int cli_main_begin(int argc, char **argv, rlk_fx_server *srv, int n, char *urls, size_t url_len)
{
    int helper = tk_holdlog_main(argc, argv);

    if (helper >= 0)
        return helper;
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    if (rlk_fx_start_n(srv, n, NULL) != 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (rlk_fx_url(&srv[i], -1, urls + (size_t)i * url_len, url_len) != 0)
            return 1;
    return cli_setup(argv[1], urls) == 0 ? -1 : 1;
}

void cli_main_end(rlk_fx_server *srv, int n)
{
    cli_teardown();
    rlk_fx_stop_n(srv, n);
}
