/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reply.c - prints a reply as redis-cli does: formatted on a terminal
 * ("(integer) 1", "\"quoted\"", "(nil)", numbered arrays), raw otherwise
 * (values as they are, one per line).
 */
#include <ctype.h>
#include <string.h>

#include "cli.h"

static void rlk_print_quoted(FILE *out, const char *s, size_t len)
{
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];

        switch (ch) {
        case '\\': fputs("\\\\", out); break;
        case '"': fputs("\\\"", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        case '\a': fputs("\\a", out); break;
        case '\b': fputs("\\b", out); break;
        default:
            if (isprint(ch))
                fputc(ch, out);
            else
                fprintf(out, "\\x%02x", ch);
        }
    }
    fputc('"', out);
}

static void rlk_print_raw(FILE *out, const redisReply *r)
{
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        fprintf(out, "%lld", r->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        fwrite(r->str, 1, r->len, out);
        break;
    case REDIS_REPLY_ARRAY:
        for (size_t i = 0; i < r->elements; i++) {
            if (i > 0)
                fputc('\n', out);
            rlk_print_raw(out, r->element[i]);
        }
        break;
    default:    /* nil: an empty line */
        break;
    }
}

static int rlk_digits(size_t n)
{
    int d = 1;

    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* prefix: the indentation of nested array lines (the first line of an element
 * follows its "N) " marker directly). */
static void rlk_print_tty(FILE *out, const redisReply *r, const char *prefix)
{
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        fprintf(out, "(integer) %lld\n", r->integer);
        return;
    case REDIS_REPLY_STRING:
        rlk_print_quoted(out, r->str, r->len);
        fputc('\n', out);
        return;
    case REDIS_REPLY_STATUS:
        fprintf(out, "%.*s\n", (int)r->len, r->str);
        return;
    case REDIS_REPLY_ERROR:
        fprintf(out, "(error) %.*s\n", (int)r->len, r->str);
        return;
    case REDIS_REPLY_NIL:
        fputs("(nil)\n", out);
        return;
    case REDIS_REPLY_ARRAY:
        break;
    default:
        fprintf(out, "(unknown reply type %d)\n", r->type);
        return;
    }
    if (r->elements == 0) {
        fputs("(empty array)\n", out);
        return;
    }
    int width = rlk_digits(r->elements);
    char inner[1024];

    snprintf(inner, sizeof inner, "%s%*s", prefix, width + 2, "");
    for (size_t i = 0; i < r->elements; i++) {
        fprintf(out, "%s%*zu) ", i == 0 ? "" : prefix, width, i + 1);
        rlk_print_tty(out, r->element[i], inner);
    }
}

void rlk_cli_print_reply(FILE *out, const redisReply *r, int raw)
{
    if (raw) {
        rlk_print_raw(out, r);
        fputc('\n', out);
    } else {
        rlk_print_tty(out, r, "");
    }
}
