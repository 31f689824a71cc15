/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * json_mini.c - see json_mini.h. Recursive descent, depth-limited.
 */
#include "json_mini.h"

#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct json_parser {
    const char *p;
    const char *err;
    int depth;
} json_parser;

static json_value *json_value_parse(json_parser *ps);

static json_value *json_fail(json_parser *ps, const char *why)
{
    if (!ps->err)
        ps->err = why;
    return NULL;
}

static void json_ws(json_parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static json_value *json_new(enum json_type t)
{
    json_value *v = calloc(1, sizeof *v);

    if (v)
        v->type = t;
    return v;
}

static int json_hex4(const char *s, unsigned *out)
{
    unsigned v = 0;

    for (int i = 0; i < 4; i++) {
        char c = s[i];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Appends code point cp (BMP) as UTF-8. */
static size_t json_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
}

static int json_escape(json_parser *ps, char *out, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = strchr(from, *ps->p);
    unsigned cp;

    if (*ps->p && hit) {
        out[(*n)++] = to[hit - from];
        ps->p++;
        return 0;
    }
    if (*ps->p != 'u' || json_hex4(ps->p + 1, &cp) < 0)
        return -1;
    *n += json_utf8(out + *n, cp);
    ps->p += 5;
    return 0;
}

static char *json_string_raw(json_parser *ps)
{
    const char *start = ++ps->p;
    char *out = malloc(strlen(start) * 3 + 1);
    size_t n = 0;

    if (!out)
        return NULL;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;

        if (c == '\0' || c < 0x20) {
            free(out);
            json_fail(ps, "bad character in string");
            return NULL;
        }
        ps->p++;
        if (c != '\\') {
            out[n++] = (char)c;
        } else if (json_escape(ps, out, &n) < 0) {
            free(out);
            json_fail(ps, "bad escape in string");
            return NULL;
        }
    }
    ps->p++;
    out[n] = '\0';
    return out;
}

static json_value *json_number(json_parser *ps)
{
    const char *s = ps->p;
    char *end;
    json_value *v;

    if (*s == '-')
        s++;
    if (!(*s >= '0' && *s <= '9'))
        return json_fail(ps, "bad number");
    if (*s == '0' && s[1] >= '0' && s[1] <= '9')
        return json_fail(ps, "leading zero");
    if (!(v = json_new(JSON_NUMBER)))
        return json_fail(ps, "out of memory");
    v->number = strtod(ps->p, &end);
    ps->p = end;
    return v;
}

static int json_push(json_value *v, json_value *item, char *key)
{
    json_value **items = realloc(v->items, (v->count + 1) * sizeof *items);
    char **keys;

    if (!items)
        return -1;
    v->items = items;
    if (v->type == JSON_OBJECT) {
        if (!(keys = realloc(v->keys, (v->count + 1) * sizeof *keys)))
            return -1;
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 0;
}

/* One member "key": value (object) or one element (array). 0 or -1. */
static int json_member(json_parser *ps, json_value *v)
{
    char *key = NULL;
    json_value *item = NULL;

    json_ws(ps);
    if (v->type == JSON_OBJECT) {
        if (*ps->p != '"' || !(key = json_string_raw(ps))) {
            json_fail(ps, "expected a key");
            return -1;
        }
        json_ws(ps);
        if (*ps->p++ != ':') {
            free(key);
            json_fail(ps, "expected ':'");
            return -1;
        }
    }
    if (!(item = json_value_parse(ps)) || json_push(v, item, key) < 0) {
        free(key);
        json_free(item);
        json_fail(ps, "bad member");
        return -1;
    }
    return 0;
}

static json_value *json_container(json_parser *ps, enum json_type t, char close)
{
    json_value *v = json_new(t);

    if (!v || ++ps->depth > JSON_MAX_DEPTH) {
        json_free(v);
        return json_fail(ps, "too deep");
    }
    ps->p++;
    json_ws(ps);
    if (*ps->p == close) {
        ps->p++;
        ps->depth--;
        return v;
    }
    for (;;) {
        if (json_member(ps, v) < 0)
            break;
        json_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p++ == close) {
            ps->depth--;
            return v;
        }
        json_fail(ps, "expected ',' or a closing bracket");
        break;
    }
    json_free(v);
    return NULL;
}

static json_value *json_literal(json_parser *ps, const char *word, enum json_type t, int b)
{
    json_value *v;

    if (strncmp(ps->p, word, strlen(word)) != 0)
        return json_fail(ps, "unknown literal");
    ps->p += strlen(word);
    if ((v = json_new(t)))
        v->boolean = b;
    return v;
}

static json_value *json_value_parse(json_parser *ps)
{
    json_value *v;

    json_ws(ps);
    switch (*ps->p) {
    case '{': return json_container(ps, JSON_OBJECT, '}');
    case '[': return json_container(ps, JSON_ARRAY, ']');
    case 't': return json_literal(ps, "true", JSON_BOOL, 1);
    case 'f': return json_literal(ps, "false", JSON_BOOL, 0);
    case 'n': return json_literal(ps, "null", JSON_NULL, 0);
    case '"':
        if (!(v = json_new(JSON_STRING)))
            return json_fail(ps, "out of memory");
        if (!(v->string = json_string_raw(ps))) {
            free(v);
            return NULL;
        }
        return v;
    default:
        return json_number(ps);
    }
}

json_value *json_parse(const char *text, const char **err)
{
    json_parser ps = {text, NULL, 0};
    json_value *v = json_value_parse(&ps);

    if (v) {
        json_ws(&ps);
        if (*ps.p != '\0') {
            json_free(v);
            v = json_fail(&ps, "text after the value");
        }
    }
    if (err)
        *err = ps.err;
    return v;
}

void json_free(json_value *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->count; i++) {
        json_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

const json_value *json_get(const json_value *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->items[i];
    return NULL;
}

const json_value *json_at(const json_value *v, size_t i)
{
    if (!v || v->type != JSON_ARRAY || i >= v->count)
        return NULL;
    return v->items[i];
}

const char *json_get_string(const json_value *v, const char *key)
{
    const json_value *m = json_get(v, key);

    return m && m->type == JSON_STRING ? m->string : NULL;
}

double json_get_number(const json_value *v, const char *key, double fallback)
{
    const json_value *m = json_get(v, key);

    return m && m->type == JSON_NUMBER ? m->number : fallback;
}
