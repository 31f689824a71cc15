/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nest.h - the nesting rule of every command that holds something while its
 * COMMAND runs (`rlk lock` in every mode, `rlk fastmulti`, `rlk semaphore`,
 * `rlk elect`), read from the environment the enclosing rlk gave its command
 * (nest.c).
 *
 * Each of them tells its command RLK_LOCK_KIND (lock, read, write, fair,
 * nonreentrantfair, fenced, nonreentrant, multi, redlock, fastmulti,
 * semaphore, elect), RLK_LOCK_NAME (the name; --all: the members' names
 * separated by spaces) and RLK_LOCK_OWNER (the holder id; --redlock: the
 * token; semaphore: the permit ids). A nested rlk that asks for a name its
 * parent holds:
 *   - of another kind family: refused before it connects (exit 2, one line):
 *     it would wait for its own parent for ever, or find the key of another
 *     kind;
 *   - of the same family: the kind's own rule. The reentrant lock (also
 *     --spin and --all's members: one family, "lock"), the read-write lock
 *     (read and write), the fair lock, the fenced lock and the faster
 *     MultiLock re-enter with the parent's holder id (a reader asking for the
 *     write lock is refused by the script); the non-reentrant kinds take the
 *     parent's holder id and are refused by their script; a RedLock and an
 *     election are refused (neither re-enters: the inner would wait for its
 *     parent); a semaphore is refused when the permits its parent holds
 *     leave fewer than it asks for (cmd_semaphore.c), and otherwise takes
 *     permits of its own.
 * Names only: a parent holding NAME on another server than the one the inner
 * rlk uses still counts (a nested rlk finds its parent's server by RLK_URL).
 */
#ifndef RLK_NEST_H
#define RLK_NEST_H

#define RLK_NEST_NAME_MAX 1100

/* What the enclosing rlk holds of the names asked for. */
typedef struct rlk_nest {
    int found;                  /* 1: it holds one of them */
    int same;                   /* 1: as the same kind family as the one asked for */
    const char *kind;           /* its RLK_LOCK_KIND (found) */
    const char *owner;          /* its RLK_LOCK_OWNER (found) */
    char name[RLK_NEST_NAME_MAX]; /* the first name asked for that it holds (found) */
} rlk_nest;

/* Looks for names[0..n) (asked for as kind, an RLK_LOCK_KIND value) in the enclosing rlk's
 * hold: n->found is 0 when there is none (no RLK_LOCK_* set, an empty RLK_LOCK_OWNER, a kind
 * this rlk does not know, or none of the names). */
void rlk_nest_find(const char *kind, const char *const *names, int nnames, rlk_nest *n);

/* The command that gives kind ("rlk lock", "rlk fastmulti", "rlk semaphore", "rlk elect"). */
const char *rlk_nest_command(const char *kind);

/* Exit 2 after the one-line refusal of a name the parent holds as another kind family:
 * "<what>: refused: the enclosing rlk lock holds NAME as another kind (RLK_LOCK_KIND=fair),
 * ...". */
int rlk_nest_refuse_other(const char *what, const rlk_nest *n);

/* Exit 2 after "<what>: refused: the enclosing <command> holds NAME already, and <why>". */
int rlk_nest_refuse_same(const char *what, const rlk_nest *n, const char *why);

/* The number of space-separated words of RLK_LOCK_OWNER (the permits a parent semaphore holds). */
int rlk_nest_owner_words(const rlk_nest *n);

#endif /* RLK_NEST_H */
