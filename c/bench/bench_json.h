/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_json: writes the one-line JSON object rlk-bench prints. */
#ifndef RLK_BENCH_JSON_H
#define RLK_BENCH_JSON_H

#include <stdio.h>

#include "bench_stats.h"

typedef struct rlk_bench_json {
    FILE *f;
    int first;
} rlk_bench_json;

void rlk_bench_json_begin(rlk_bench_json *j, FILE *f);
/* val NULL: null */
void rlk_bench_json_str(rlk_bench_json *j, const char *key, const char *val);
void rlk_bench_json_int(rlk_bench_json *j, const char *key, long long val);
/* NAN or infinite: null */
void rlk_bench_json_num(rlk_bench_json *j, const char *key, double val, int decimals);
/* A summary of ns samples, written in µs: {"n","p50","p99","max","mean"}. */
void rlk_bench_json_summary_us(rlk_bench_json *j, const char *key, const rlk_bench_summary *s);
/* Closes the object and ends the line. */
void rlk_bench_json_end(rlk_bench_json *j);

#endif /* RLK_BENCH_JSON_H */
