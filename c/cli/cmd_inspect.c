/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_inspect.c - rlk inspect NAME [--kind KIND] [--json]
 *
 * Shows what the name holds: which kind of lock or synchronizer (detected
 * by inspect_read.c, or forced with --kind) and its state, as text or as
 * one JSON object. Each kind prints with one small function.
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "inspect.h"

#define INSPECT_EXIT_FREE 1     /* the exit code of a free NAME (0: held) */

typedef struct inspect_opts {
    const char *name;
    const char *url;
    int json;
    int kind;
} inspect_opts;

/* ---------------------------------------------------------------- parsing */

static int inspect_kind_opt(int argc, char **argv, int *i, inspect_opts *o)
{
    const char *v;
    int got = rlk_cli_opt_value("inspect", argc, argv, i, "--kind", &v);

    if (got <= 0)
        return got;
    if ((o->kind = rlk_ik_from_word(v)) == RLK_IK_NONE) {
        rlk_cli_usage("inspect", "unknown kind '%s': reentrant, rwlock, fair, fenced, token, "
                      "semaphore, psemaphore, latch or fastmulti", v);
        return -1;
    }
    return 1;
}

static int inspect_parse(int argc, char **argv, inspect_opts *o)
{
    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("inspect", argc, argv, &i, "--url", &o->url);

        if (got == 0)
            got = inspect_kind_opt(argc, argv, &i, o);
        if (got == 0 && (got = rlk_cli_opt_value("inspect", argc, argv, &i, "--name",
                                                 &o->name)) > 0 && o->name[0] == '\0')
            return rlk_cli_usage("inspect", "the lock name must not be empty");
        if (got == 0)
            got = rlk_cli_global_opt("inspect", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(rlk_cli_help_inspect, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return rlk_cli_unknown_option("inspect", argv[i]);
        else if (o->name)
            return rlk_cli_usage("inspect", "unexpected argument '%s'", argv[i]);
        else
            o->name = argv[i];
        i++;
    }
    if (!o->name)
        return rlk_cli_usage("inspect", "missing the lock NAME");
    if (o->name[0] == '\0')
        return rlk_cli_usage("inspect", "the lock name must not be empty");
    return -1;
}

/* ---------------------------------------------------------------- text */

static void inspect_text_ttl(const rlk_ik_view *v)
{
    if (v->ttl_ms == -1)
        printf("ttl:     none (no expiry)\n");
    else if (v->ttl_ms >= 0)
        printf("ttl:     %lld ms\n", v->ttl_ms);
}

static void inspect_text_holders(const rlk_ik_view *v)
{
    if (v->nholders == 0)
        printf("holder:  none (free)\n");
    for (size_t k = 0; k < v->nholders; k++) {
        char line[1200];

        rlk_ik_text_holder(line, sizeof line, &v->holders[k]);
        printf("holder:  %s\n", rlk_cli_show(line));
    }
}

static const rlk_ik_holder *inspect_writer(const rlk_ik_view *v)
{
    for (size_t k = 0; k < v->nholders; k++)
        if (v->holders[k].mode && strcmp(v->holders[k].mode, "write") == 0)
            return &v->holders[k];
    return NULL;
}

static size_t inspect_readers(const rlk_ik_view *v)
{
    size_t n = 0;

    for (size_t k = 0; k < v->nholders; k++)
        n += v->holders[k].mode && strcmp(v->holders[k].mode, "read") == 0;
    return n;
}

static void inspect_text_rwlock(const rlk_ik_view *v)
{
    const rlk_ik_holder *w = inspect_writer(v);

    printf("mode:    %s\n", v->mode ? rlk_cli_show(v->mode) : "none (free)");
    inspect_text_ttl(v);
    inspect_text_holders(v);
    printf("readers: %zu\n", inspect_readers(v));
    if (w)
        printf("writer:  %s  count %lld\n", rlk_cli_shown(w->owner, w->owner_len), w->count);
    else
        printf("writer:  none\n");
}

static void inspect_text_fair(const rlk_ik_view *v)
{
    inspect_text_ttl(v);
    inspect_text_holders(v);
    if (v->nqueue == 0)
        printf("queue:   empty\n");
    for (size_t k = 0; k < v->nqueue; k++)
        printf("queue:   %zu. %s  deadline in %lld ms\n", k + 1,
               rlk_cli_shown(v->queue[k].owner, v->queue[k].owner_len), v->queue[k].deadline_in_ms);
}

static void inspect_text_psemaphore(const rlk_ik_view *v)
{
    printf("available: %lld\nheld:      %zu\n", v->count, v->permits_total);
    for (size_t k = 0; k < v->npermits; k++) {
        const rlk_permit_info *p = &v->permits[k];

        if (p->ttl_ms == -1)
            printf("permit:  %s  no expiry\n", rlk_cli_show(p->id));
        else if (p->ttl_ms <= 0)
            printf("permit:  %s  expired (given back on the next call)\n", rlk_cli_show(p->id));
        else
            printf("permit:  %s  expires in %lld ms\n", rlk_cli_show(p->id), p->ttl_ms);
    }
    if (v->npermits < v->permits_total)
        printf("permit:  ... and %zu more\n", v->permits_total - v->npermits);
}

static void inspect_text_fastmulti(const rlk_ik_view *v)
{
    inspect_text_ttl(v);
    if (v->nvalues == 0)
        printf("value:   none (free)\n");
    for (size_t k = 0; k < v->nvalues; k++) {
        const rlk_ik_value *e = &v->values[k];

        printf("value:   %s  holder %s  count %lld  ", rlk_cli_shown(e->value, e->value_len),
               rlk_cli_shown(e->holder, e->holder_len), e->count);
        if (e->expire_in_ms > 0)
            printf("expires in %lld ms\n", e->expire_in_ms);
        else
            printf("lapsed %lld ms ago (free to take)\n", -e->expire_in_ms);
    }
}

/* rlk elect's leader on a fenced lock: who leads, in which term, proclaiming what. */
static void inspect_text_election(const rlk_ik_view *v)
{
    const rlk_elect_info *e = &v->elect;

    if (e->leader) {
        printf("leader:  %s\n", rlk_cli_show(e->holder));
        printf("term:    %lld\n", e->term);
        printf("value:   %s\n", rlk_cli_shown(e->value ? e->value : "", e->value ? e->value_len : 0));
    } else {
        printf("leader:  none\n");
        printf("term:    %lld (the last)\n", e->term);
    }
}

/* A hash of counts without a TTL: what it may be besides a held reentrant lock, and what a
 * force unlock does with it. */
static void inspect_text_reentrant_note(const rlk_ik_view *v)
{
    const char *shown = rlk_cli_show(v->name);

    if (v->no_ttl_hash)
        printf("note:    no TTL, which a lock rlk or Redisson holds always has: a lock whose "
               "expiry was cleared (Redisson's clearExpire) or an application's hash of counts; "
               "rlk unlock --force refuses it, rlk unlock --force --kind reentrant %s removes "
               "it\n", shown);
}

static void inspect_text_body(const rlk_ik_view *v)
{
    switch (v->kind) {
    case RLK_IK_RWLOCK:
        inspect_text_rwlock(v);
        break;
    case RLK_IK_FAIR:
        inspect_text_fair(v);
        break;
    case RLK_IK_FENCED:
        inspect_text_ttl(v);
        inspect_text_holders(v);
        printf("token:   %lld (the last fencing token issued)\n", v->fence_token);
        if (v->election)
            inspect_text_election(v);
        break;
    case RLK_IK_TOKEN:
        printf("token:   %s\n", rlk_cli_shown(v->token ? v->token : "", v->token ? v->token_len : 0));
        inspect_text_ttl(v);
        break;
    case RLK_IK_SEMAPHORE:
        printf("available: %lld\n", v->count);
        if (v->detected && !v->marked)     /* no marker: a latch's key looks the same */
            printf("(a count-down latch looks the same: rlk inspect %s --kind latch)\n", rlk_cli_show(v->name));
        break;
    case RLK_IK_PSEMAPHORE:
        inspect_text_psemaphore(v);
        break;
    case RLK_IK_LATCH:
        printf("count:   %lld%s\n", v->count, v->count <= 0 ? " (open)" : "");
        break;
    case RLK_IK_FASTMULTI:
        inspect_text_fastmulti(v);
        break;
    default:
        inspect_text_ttl(v);
        inspect_text_holders(v);
        if (v->kind == RLK_IK_REENTRANT && v->no_ttl_hash)
            inspect_text_reentrant_note(v);
    }
}

/* The lock-delay's key and what is left of it (a lock's delay key lives while it is held,
 * refreshed with it, and lease + delay after a holder lost it). */
static void inspect_text_delay(const rlk_ik_view *v)
{
    if (v->delay_ttl_ms == -2)
        return;
    if (v->delay_ttl_ms == -1)
        printf("delay:   %s  no expiry\n", rlk_cli_show(v->delay_key));
    else
        printf("delay:   %s  PTTL %lld ms\n", rlk_cli_show(v->delay_key), v->delay_ttl_ms);
}

static void inspect_print_text(const rlk_ik_view *v)
{
    if (v->kind == RLK_IK_NONE && v->delay_ttl_ms != -2) {
        char left[32];

        rlk_lc_format_seconds(v->delay_ttl_ms > 0 ? v->delay_ttl_ms : 0, left, sizeof left);
        printf("%s: no lock, but in its lock-delay: a holder lost it without releasing it; "
               "rlk lock --lock-delay takes it in %s s\n", rlk_cli_show(v->name),
               v->delay_ttl_ms >= 0 ? left : "(no expiry)");
        inspect_text_delay(v);
        return;
    }
    if (v->kind == RLK_IK_NONE) {
        printf("%s: no lock\n", rlk_cli_show(v->name));
        return;
    }
    if (v->kind == RLK_IK_OTHER) {
        printf("%s: not a lock rlk knows: the key holds a %s\n", rlk_cli_show(v->name), rlk_cli_show(v->type));
        return;
    }
    if (v->election)
        printf("%s: election (rlk elect, on a %s)\n", rlk_cli_show(v->name),
               rlk_ik_label(v->kind));
    else
        printf("%s: %s\n", rlk_cli_show(v->name), rlk_ik_label(v->kind));
    inspect_text_body(v);
    inspect_text_delay(v);
}

/* ---------------------------------------------------------------- JSON */

static void inspect_json_str(const char *key, const char *s, size_t len)
{
    printf(",\"%s\":", key);
    rlk_lc_json_string(stdout, s, len);
}

void rlk_ik_json_holder(FILE *out, const rlk_ik_holder *h, int with_mode)
{
    fputs("{\"owner\":", out);
    rlk_lc_json_string(out, h->owner, h->owner_len);
    fprintf(out, ",\"count\":%lld", h->count);
    if (with_mode && h->mode)
        fprintf(out, ",\"mode\":\"%s\"", h->mode);
    fputc('}', out);
}

static void inspect_json_holder(const rlk_ik_holder *h, int with_mode)
{
    rlk_ik_json_holder(stdout, h, with_mode);
}

void rlk_ik_text_holder(char *buf, size_t len, const rlk_ik_holder *h)
{
    snprintf(buf, len, "%.*s  count %lld%s%s", (int)h->owner_len, h->owner, h->count,
             h->mode ? "  " : "", h->mode ? h->mode : "");
}

static void inspect_json_holders(const rlk_ik_view *v)
{
    printf(",\"ttl_ms\":%lld,\"holders\":[", v->ttl_ms);
    for (size_t k = 0; k < v->nholders; k++) {
        if (k)
            fputc(',', stdout);
        inspect_json_holder(&v->holders[k], 1);
    }
    fputc(']', stdout);
}

static void inspect_json_rwlock(const rlk_ik_view *v)
{
    const rlk_ik_holder *w = inspect_writer(v);
    int first = 1;

    if (v->mode)
        inspect_json_str("mode", v->mode, strlen(v->mode));
    else
        fputs(",\"mode\":null", stdout);
    inspect_json_holders(v);
    fputs(",\"readers\":[", stdout);
    for (size_t k = 0; k < v->nholders; k++) {
        if (!v->holders[k].mode || strcmp(v->holders[k].mode, "read") != 0)
            continue;
        fputs(first ? "" : ",", stdout);
        inspect_json_holder(&v->holders[k], 0);
        first = 0;
    }
    fputs("],\"writer\":", stdout);
    if (w)
        inspect_json_holder(w, 0);
    else
        fputs("null", stdout);
}

static void inspect_json_queue(const rlk_ik_view *v)
{
    fputs(",\"queue\":[", stdout);
    for (size_t k = 0; k < v->nqueue; k++) {
        fputs(k ? ",{\"owner\":" : "{\"owner\":", stdout);
        rlk_lc_json_string(stdout, v->queue[k].owner, v->queue[k].owner_len);
        printf(",\"deadline_ms\":%lld,\"deadline_in_ms\":%lld}", v->queue[k].deadline_ms,
               v->queue[k].deadline_in_ms);
    }
    fputc(']', stdout);
}

static void inspect_json_permits(const rlk_ik_view *v)
{
    printf(",\"available\":%lld,\"held\":%zu,\"permits\":[", v->count, v->permits_total);
    for (size_t k = 0; k < v->npermits; k++) {
        fputs(k ? ",{\"id\":" : "{\"id\":", stdout);
        rlk_lc_json_string(stdout, v->permits[k].id, strlen(v->permits[k].id));
        printf(",\"ttl_ms\":%lld}", v->permits[k].ttl_ms);
    }
    fputc(']', stdout);
}

void rlk_ik_json_value(FILE *out, const rlk_ik_value *e)
{
    fputs("{\"value\":", out);
    rlk_lc_json_string(out, e->value, e->value_len);
    fputs(",\"holder\":", out);
    rlk_lc_json_string(out, e->holder, e->holder_len);
    fprintf(out, ",\"count\":%lld,\"expire_ms\":%lld,\"expire_in_ms\":%lld,\"held\":%s}",
            e->count, e->expire_ms, e->expire_in_ms, e->expire_in_ms > 0 ? "true" : "false");
}

static void inspect_json_values(const rlk_ik_view *v)
{
    printf(",\"ttl_ms\":%lld,\"values\":[", v->ttl_ms);
    for (size_t k = 0; k < v->nvalues; k++) {
        fputs(k ? "," : "", stdout);
        rlk_ik_json_value(stdout, &v->values[k]);
    }
    fputc(']', stdout);
}

static void inspect_json_body(const rlk_ik_view *v)
{
    switch (v->kind) {
    case RLK_IK_OTHER:
        inspect_json_str("type", v->type, strlen(v->type));
        break;
    case RLK_IK_TOKEN:
        inspect_json_str("token", v->token ? v->token : "", v->token_len);
        printf(",\"ttl_ms\":%lld", v->ttl_ms);
        break;
    case RLK_IK_RWLOCK:
        inspect_json_rwlock(v);
        break;
    case RLK_IK_FAIR:
        inspect_json_holders(v);
        inspect_json_queue(v);
        break;
    case RLK_IK_FENCED:
        inspect_json_holders(v);
        printf(",\"fence_token\":%lld", v->fence_token);
        if (v->election) {
            printf(",\"election\":{\"leader\":");
            if (v->elect.leader)
                rlk_lc_json_string(stdout, v->elect.holder, strlen(v->elect.holder));
            else
                fputs("null", stdout);
            printf(",\"term\":%lld,\"value\":", v->elect.term);
            rlk_lc_json_string(stdout, v->elect.value ? v->elect.value : "",
                               v->elect.value ? v->elect.value_len : 0);
            fputc('}', stdout);
        }
        break;
    case RLK_IK_SEMAPHORE:
        printf(",\"available\":%lld,\"ttl_ms\":%lld", v->count, v->ttl_ms);
        break;
    case RLK_IK_PSEMAPHORE:
        inspect_json_permits(v);
        break;
    case RLK_IK_LATCH:
        printf(",\"count\":%lld", v->count);
        break;
    case RLK_IK_REENTRANT:
        inspect_json_holders(v);
        if (v->no_ttl_hash)      /* a plain unlock --force refuses it (see the text's note) */
            fputs(",\"no_ttl\":true", stdout);
        break;
    case RLK_IK_FASTMULTI:
        inspect_json_values(v);
        break;
    default:
        break;
    }
}

static void inspect_print_json(const rlk_ik_view *v, int held)
{
    fputs("{\"name\":", stdout);
    rlk_lc_json_string(stdout, v->name, strlen(v->name));
    printf(",\"kind\":\"%s\"", rlk_ik_word(v->kind));
    inspect_json_body(v);
    if (v->delay_ttl_ms != -2) {
        fputs(",\"lock_delay\":{\"key\":", stdout);
        rlk_lc_json_string(stdout, v->delay_key, strlen(v->delay_key));
        printf(",\"pttl_ms\":%lld}", v->delay_ttl_ms);
    }
    if (held >= 0)
        printf(",\"state\":\"%s\"", held ? "held" : "free");
    fputs("}\n", stdout);
}

/* ---------------------------------------------------------------- the answer */

/* The exit code's answer: 1 held (exit 0), 0 free (exit 1), -1 neither (a key that is not a
 * lock: exit 4). Held: a lock with a holder, a token lock's token, a group with a value held
 * (not lapsed), a semaphore without a permit available, an armed latch. */
static int inspect_held(const rlk_ik_view *v)
{
    switch (v->kind) {
    case RLK_IK_NONE:
        return 0;
    case RLK_IK_OTHER:
        return -1;
    case RLK_IK_TOKEN:
        return v->token != NULL;
    case RLK_IK_SEMAPHORE:
    case RLK_IK_PSEMAPHORE:
        return v->count <= 0;
    case RLK_IK_LATCH:
        return v->count > 0;
    case RLK_IK_FASTMULTI:
        for (size_t k = 0; k < v->nvalues; k++)
            if (v->values[k].expire_in_ms > 0)
                return 1;
        return 0;
    default:
        return v->nholders > 0;
    }
}

/* ---------------------------------------------------------------- command */

static int inspect_failed(rlk_client *c, const rlk_ik_view *v, int rc)
{
    char what[300];

    if (rc == RLK_ERR_ARG)
        return rlk_cli_fail(RLK_EXIT_REPLY, "inspect %s: not a %s (the key holds a %s)",
                            v->name, rlk_ik_label(v->kind), v->type);
    snprintf(what, sizeof what, "inspect %s", v->name);
    return rlk_lc_fail(c, rc, what);
}

static int inspect_run(int argc, char **argv)
{
    inspect_opts o = {NULL, NULL, 0, RLK_IK_AUTO};
    rlk_ik_view v;
    rlk_client *c;
    int rc;

    if ((rc = inspect_parse(argc, argv, &o)) >= 0)
        return rc;
    if ((rc = rlk_cli_check_name("inspect", o.name)) >= 0)
        return rc;
    if (!(c = rlk_cli_connect(o.url, NULL, 1, &rc)))
        return rc;
    rc = rlk_ik_read(c, o.name, o.kind, &v);
    if (rc != RLK_OK) {
        rc = inspect_failed(c, &v, rc);
    } else {
        int held = inspect_held(&v);

        if (o.json)
            inspect_print_json(&v, held);
        else
            inspect_print_text(&v);
        rc = held > 0 ? RLK_EXIT_OK : held == 0 ? INSPECT_EXIT_FREE : RLK_EXIT_REPLY;
    }
    rlk_ik_free(&v);
    rlk_free(c);
    return rc;
}

const rlk_cli_command rlk_cmd_inspect = {
    "inspect",
    "show a lock, semaphore or latch (rlk inspect NAME [--json])",
    rlk_cli_help_inspect,
    inspect_run,
};
