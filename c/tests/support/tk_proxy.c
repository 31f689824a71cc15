/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tk_proxy.c - the partitioning loopback proxy (tk_proxy.h).
 *
 * One thread polls the wake pipe, the listening socket and every connection.
 * A connection is two non-blocking sockets (client, server) and one buffer
 * per direction: a side is read only when its buffer is empty, and the
 * buffer is written to the other side when that side is writable, so a
 * connection's bytes keep their order and nothing blocks the thread. Every
 * step after a poll runs under the mutex and only if the mode did not change
 * since the poll was set up (a generation count), so a cut or a heal takes
 * effect before the call returns.
 */
#include "tk_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TK_PROXY_CONNS 64
#define TK_PROXY_BUF 16384
#define TK_PROXY_POLL_MS 100    /* a bound on each wait; the pipe wakes it earlier */

typedef struct tk_pconn {
    int fd[2];                  /* client, server; fd[0] -1: a free slot; fd[1] -1: not linked */
    int muted;                  /* what the server sends is read and dropped (tk_proxy_mute) */
    size_t len[2], off[2];      /* buf[d]: read from fd[d], to be written to fd[1 - d] */
    char buf[2][TK_PROXY_BUF];
} tk_pconn;

struct tk_proxy {
    int lfd, port, target, wake[2];
    pthread_t th;
    pthread_mutex_t mu;
    int cut, stop, gen, open, accepted_cut;     /* under mu */
    tk_pconn c[TK_PROXY_CONNS];
};

static void tk_proxy_close(tk_proxy *p, tk_pconn *c)
{
    for (int d = 0; d < 2; d++) {
        if (c->fd[d] >= 0)
            close(c->fd[d]);
        c->fd[d] = -1;
        c->len[d] = c->off[d] = 0;
    }
    c->muted = 0;
    p->open--;
}

int tk_tcp_connect(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The server side of c (pass mode only); the connection is closed if the server refuses. */
static void tk_proxy_link(tk_proxy *p, tk_pconn *c)
{
    int fd = tk_tcp_connect(p->target);

    if (fd >= 0 && fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
        close(fd);
        fd = -1;
    }
    c->fd[1] = fd;
    if (fd < 0)
        tk_proxy_close(p, c);
}

static void tk_proxy_accept(tk_proxy *p)
{
    int fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0)
        return;
    for (int i = 0; i < TK_PROXY_CONNS; i++) {
        tk_pconn *c = &p->c[i];

        if (c->fd[0] >= 0)
            continue;
        c->fd[0] = fd;
        c->fd[1] = -1;
        p->open++;
        if (p->cut)
            p->accepted_cut++;      /* accepted, goes nowhere until the heal */
        else
            tk_proxy_link(p, c);
        return;
    }
    close(fd);                      /* full: refused as a server with no room would */
}

/* Entry (c, d) polled fd[d]: reads into buf[d] or writes buf[1 - d] to it. */
static void tk_proxy_io(tk_proxy *p, tk_pconn *c, int d, short rev)
{
    ssize_t n;

    if ((rev & POLLOUT) && c->len[1 - d]) {
        n = write(c->fd[d], c->buf[1 - d] + c->off[1 - d], c->len[1 - d] - c->off[1 - d]);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            tk_proxy_close(p, c);
            return;
        }
        if (n > 0 && (c->off[1 - d] += (size_t)n) == c->len[1 - d])
            c->len[1 - d] = c->off[1 - d] = 0;
    }
    if (!(rev & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
        return;
    if (c->len[d]) {                /* not read (buffer full): a hang-up or an error */
        tk_proxy_close(p, c);
        return;
    }
    n = read(c->fd[d], c->buf[d], TK_PROXY_BUF);
    if (n > 0 && d == 1 && c->muted)
        return;                     /* a reply dropped */
    if (n > 0)
        c->len[d] = (size_t)n, c->off[d] = 0;
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        tk_proxy_close(p, c);       /* the end (its buffer is empty: all passed on) */
}

static void *tk_proxy_main(void *arg)
{
    tk_proxy *p = arg;
    struct pollfd f[2 + 2 * TK_PROXY_CONNS];

    for (;;) {
        int gen, cut;

        pthread_mutex_lock(&p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        gen = p->gen;
        cut = p->cut;
        for (int i = 0; !cut && i < TK_PROXY_CONNS; i++)
            if (p->c[i].fd[0] >= 0 && p->c[i].fd[1] < 0)
                tk_proxy_link(p, &p->c[i]);     /* accepted during a cut, now healed */
        pthread_mutex_unlock(&p->mu);
        f[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        f[1] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
        for (int i = 0; i < TK_PROXY_CONNS; i++) {
            tk_pconn *c = &p->c[i];

            for (int d = 0; d < 2; d++)
                f[2 + 2 * i + d] = (struct pollfd){
                    .fd = cut || c->fd[0] < 0 || c->fd[1] < 0 ? -1 : c->fd[d],
                    .events = (short)((c->len[d] ? 0 : POLLIN) | (c->len[1 - d] ? POLLOUT : 0))};
        }
        if (poll(f, 2 + 2 * TK_PROXY_CONNS, TK_PROXY_POLL_MS) <= 0)
            continue;
        if (f[0].revents) {
            char drain[64];

            if (read(p->wake[0], drain, sizeof drain) < 0) {
                /* non-blocking: empty already */
            }
        }
        pthread_mutex_lock(&p->mu);
        if (p->gen == gen) {        /* else the mode changed: set the poll up again */
            if (f[1].revents & POLLIN)
                tk_proxy_accept(p);
            for (int i = 0; i < TK_PROXY_CONNS; i++)
                for (int d = 0; d < 2 && f[2 + 2 * i + d].fd >= 0; d++)
                    if (f[2 + 2 * i + d].revents && p->c[i].fd[0] >= 0)
                        tk_proxy_io(p, &p->c[i], d, f[2 + 2 * i + d].revents);
        }
        pthread_mutex_unlock(&p->mu);
    }
}

tk_proxy *tk_proxy_start(int target_port)
{
    tk_proxy *p = calloc(1, sizeof *p);
    struct sockaddr_in a;
    socklen_t alen = sizeof a;

    if (!p)
        return NULL;
    p->target = target_port;
    for (int i = 0; i < TK_PROXY_CONNS; i++)
        p->c[i].fd[0] = p->c[i].fd[1] = -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);     /* port 0: a free one */
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->lfd, 64) != 0 || getsockname(p->lfd, (struct sockaddr *)&a, &alen) != 0 ||
        pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        if (p->lfd >= 0)
            close(p->lfd);
        free(p);
        return NULL;
    }
    p->port = ntohs(a.sin_port);
    pthread_mutex_init(&p->mu, NULL);
    if (pthread_create(&p->th, NULL, tk_proxy_main, p) != 0) {
        close(p->lfd), close(p->wake[0]), close(p->wake[1]);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

int tk_proxy_port(const tk_proxy *p)
{
    return p->port;
}

static void tk_proxy_set(tk_proxy *p, int cut, int stop)
{
    pthread_mutex_lock(&p->mu);
    p->cut = cut;
    p->stop = stop;
    p->gen++;
    pthread_mutex_unlock(&p->mu);
    if (write(p->wake[1], "w", 1) < 0) {
        /* the pipe is full: the thread is woken already */
    }
}

void tk_proxy_cut(tk_proxy *p)
{
    tk_proxy_set(p, 1, 0);
}

void tk_proxy_mute(tk_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < TK_PROXY_CONNS; i++)
        if (p->c[i].fd[0] >= 0)
            p->c[i].muted = 1;
    pthread_mutex_unlock(&p->mu);
}

void tk_proxy_heal(tk_proxy *p)
{
    tk_proxy_set(p, 0, 0);
}

static int tk_proxy_get(tk_proxy *p, const int *field)
{
    int v;

    pthread_mutex_lock(&p->mu);
    v = *field;
    pthread_mutex_unlock(&p->mu);
    return v;
}

int tk_proxy_open(tk_proxy *p)
{
    return tk_proxy_get(p, &p->open);
}

int tk_proxy_accepted_cut(tk_proxy *p)
{
    return tk_proxy_get(p, &p->accepted_cut);
}

void tk_proxy_stop(tk_proxy *p)
{
    if (!p)
        return;
    tk_proxy_set(p, p->cut, 1);
    pthread_join(p->th, NULL);
    for (int i = 0; i < TK_PROXY_CONNS; i++)
        if (p->c[i].fd[0] >= 0)
            tk_proxy_close(p, &p->c[i]);
    close(p->lfd), close(p->wake[0]), close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
