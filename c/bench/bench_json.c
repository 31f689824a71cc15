/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_json: see bench_json.h. */
#include "bench_json.h"

#include <math.h>

static void rlk_bench_json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', f);
    for (; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void rlk_bench_json_key(rlk_bench_json *j, const char *key)
{
    if (!j->first)
        fputc(',', j->f);
    j->first = 0;
    rlk_bench_json_string(j->f, key);
    fputc(':', j->f);
}

static void rlk_bench_json_number(FILE *f, double val, int decimals)
{
    if (isnan(val) || isinf(val))
        fputs("null", f);
    else
        fprintf(f, "%.*f", decimals, val);
}

void rlk_bench_json_begin(rlk_bench_json *j, FILE *f)
{
    j->f = f;
    j->first = 1;
    fputc('{', f);
}

void rlk_bench_json_str(rlk_bench_json *j, const char *key, const char *val)
{
    rlk_bench_json_key(j, key);
    if (val == NULL)
        fputs("null", j->f);
    else
        rlk_bench_json_string(j->f, val);
}

void rlk_bench_json_int(rlk_bench_json *j, const char *key, long long val)
{
    rlk_bench_json_key(j, key);
    fprintf(j->f, "%lld", val);
}

void rlk_bench_json_num(rlk_bench_json *j, const char *key, double val, int decimals)
{
    rlk_bench_json_key(j, key);
    rlk_bench_json_number(j->f, val, decimals);
}

void rlk_bench_json_summary_us(rlk_bench_json *j, const char *key, const rlk_bench_summary *s)
{
    rlk_bench_json_key(j, key);
    fprintf(j->f, "{\"n\":%zu,\"p50\":", s->n);
    rlk_bench_json_number(j->f, s->p50 / 1000.0, 3);
    fputs(",\"p99\":", j->f);
    rlk_bench_json_number(j->f, s->p99 / 1000.0, 3);
    fputs(",\"max\":", j->f);
    rlk_bench_json_number(j->f, s->max / 1000.0, 3);
    fputs(",\"mean\":", j->f);
    rlk_bench_json_number(j->f, s->mean / 1000.0, 3);
    fputc('}', j->f);
}

void rlk_bench_json_end(rlk_bench_json *j)
{
    fputs("}\n", j->f);
    fflush(j->f);
}
