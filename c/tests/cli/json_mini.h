/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * json_mini.h - a small strict JSON parser for checking `--json` output in
 * tests: one value, UTF-8 text, whitespace around; numbers as double.
 */
#ifndef RLK_JSON_MINI_H
#define RLK_JSON_MINI_H

#include <stddef.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

typedef struct json_value {
    enum json_type type;
    int boolean;
    double number;
    char *string;               /* decoded, NUL-terminated */
    struct json_value **items;  /* array elements or object values */
    char **keys;                /* object keys */
    size_t count;
} json_value;

/* NULL when text is not exactly one JSON value (then *err says where). */
json_value *json_parse(const char *text, const char **err);
void json_free(json_value *v);
/* Object member by key, NULL when absent or v is not an object. */
const json_value *json_get(const json_value *v, const char *key);
/* Array element i, NULL when out of range or v is not an array. */
const json_value *json_at(const json_value *v, size_t i);
/* Convenience: the member's string (NULL unless a string), number (fallback when not a number). */
const char *json_get_string(const json_value *v, const char *key);
double json_get_number(const json_value *v, const char *key, double fallback);

#endif /* RLK_JSON_MINI_H */
