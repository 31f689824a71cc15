/*
 * wait_report.h - `--verbose` while `rlk lock` / `rlk semaphore` waits
 * (wait_report.c): a thread with its own connection says on stderr how long
 * rlk has been waiting and who holds what it waits for, once after a second
 * and then every 10 seconds, until the wait ends.
 */
#ifndef RLK_WAIT_REPORT_H
#define RLK_WAIT_REPORT_H

#define RLK_WR_FIRST_MS 1000LL      /* the first report */
#define RLK_WR_EVERY_MS 10000LL     /* the ones after it */

/* Starts reporting when --verbose is on (else does nothing). what: "lock job"
 * for the messages; url: the server (NULL: the global --url chain); name: the
 * key to read the holders of, NULL to report the time only (--redlock, --all).
 * One report at a time per process. */
void rlk_wr_start(const char *what, const char *url, const char *name);
/* Stops reporting (joins the thread); acquired: say how long the wait took
 * when a report was printed. Safe to call when nothing runs, and twice. */
void rlk_wr_stop(int acquired);

#endif /* RLK_WAIT_REPORT_H */
