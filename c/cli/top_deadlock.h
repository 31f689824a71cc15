/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top_deadlock.h - rlk top's wait-for graph (docs/deadlock.md): the "waits"
 * member of its JSON and the DEADLOCK lines of its text view.
 */
#ifndef RLK_CLI_TOP_DEADLOCK_H
#define RLK_CLI_TOP_DEADLOCK_H

#include <stdio.h>

#include <rlk.h>

/* {"edges":[...],"cycles":[...]} of g; null when g is NULL (not read). */
void rlk_top_waits_json(FILE *out, const rlk_waitgraph *g);
/* The DEADLOCK lines of g's cycles for a terminal cols wide: line k
 * (terminal-safe) into buf; returns how many lines there are (0: no cycle,
 * or g NULL). */
size_t rlk_top_deadlock_line(const rlk_waitgraph *g, int cols, size_t k, char *buf, size_t len);

#endif /* RLK_CLI_TOP_DEADLOCK_H */
