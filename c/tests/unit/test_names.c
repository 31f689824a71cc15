/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kinds' names (kinds/names.h) against Redisson's layouts, and the KEYS
 * roles generated from the script headers (rlk_script_key_roles) against
 * the table: every embedded script's roles are known to rlk_names_key, one
 * per KEYS line, as many as its numkeys (a variadic script: one role), and
 * every script belongs to a kind the table lists.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "client/scripts.h"
#include "kinds/names.h"

/* Checks a malloc'd name against want and frees it. */
static void check_name(char *got, const char *want)
{
    CHECKF(got && strcmp(got, want) == 0, "got '%s', want '%s'", got ? got : "(null)", want);
    free(got);
}

static void test_channels(void)
{
    check_name(rlk_names_channel(rlk_names_kind_find("reentrant"), "a"),
               "redisson_lock__channel:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("fair"), "a"), "redisson_lock__channel:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("fenced"), "a"),
               "redisson_lock__channel:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("rwlock"), "a"), "redisson_rwlock:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("semaphore"), "a"), "redisson_sc:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("psemaphore"), "a"), "redisson_sc:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("latch"), "a"),
               "redisson_countdownlatch__channel__{a}");
    /* a name with its own tag keeps it; the latch braces every name (Redisson) */
    check_name(rlk_names_channel(rlk_names_kind_find("reentrant"), "{t}x"),
               "redisson_lock__channel:{t}x");
    check_name(rlk_names_channel(rlk_names_kind_find("latch"), "{t}x"),
               "redisson_countdownlatch__channel__{{t}x}");
    CHECK(rlk_names_channel(rlk_names_kind_find("token"), "a") == NULL);
    CHECK(rlk_names_kind_find("nope") == NULL);
    check_name(rlk_names_waiter_channel("a", "w1xyz", 2), "redisson_lock__channel:{a}:w1");
    check_name(rlk_names_rw_timeout("a", "o", 1), "{a}:o:rwlock_timeout:1");
}

static void test_keys(void)
{
    const rlk_names_kind *fair = rlk_names_kind_find("fair");
    const rlk_names_kind *psem = rlk_names_kind_find("psemaphore");
    const rlk_names_kind *lock = rlk_names_kind_find("reentrant");
    int unknown;

    check_name(rlk_names_key(lock, "lock", "a", &unknown), "a");
    check_name(rlk_names_key(lock, "waiters", "a", &unknown), "{a}:rlk_waiters");
    check_name(rlk_names_key(lock, "grant", "a", &unknown), "{a}:rlk_next");
    check_name(rlk_names_key(fair, "queue", "a", &unknown), "redisson_lock_queue:{a}");
    check_name(rlk_names_key(fair, "timeouts", "a", &unknown), "redisson_lock_timeout:{a}");
    check_name(rlk_names_key(psem, "timeouts", "a", &unknown), "{a}:timeout");
    check_name(rlk_names_key(rlk_names_kind_find("fenced"), "token", "a", &unknown),
               "redisson_lock_token:{a}");
    check_name(rlk_names_key(rlk_names_kind_find("rwlock"), "prefix", "a", &unknown), "{a}");
    check_name(rlk_names_key(rlk_names_kind_find("elect"), "state", "a", &unknown), "{a}:elect");
    check_name(rlk_names_key(rlk_names_kind_find("elect"), "lock_channel", "a", &unknown),
               "redisson_lock__channel:{a}");
    check_name(rlk_names_channel(rlk_names_kind_find("elect"), "a"), "rlk_elect__channel:{a}");
    CHECK(rlk_names_key(lock, "nonsense", "a", &unknown) == NULL);
    CHECK_INT_EQ(unknown, 1);
}

static void test_channel_prefix(void)
{
    const char *ch[] = {"redisson_lock__channel:{a}", "redisson_rwlock:{a}", "redisson_sc:{a}",
                        "redisson_countdownlatch__channel__{a}"};

    for (size_t i = 0; i < 4; i++) {
        size_t p = rlk_names_channel_prefix(ch[i], strlen(ch[i]));

        CHECKF(p > 0 && strcmp(ch[i] + p, "{a}") == 0, "%s: prefix length %zu", ch[i], p);
        CHECK(rlk_names_channel_head(i) != NULL);
    }
    CHECK(rlk_names_channel_head(RLK_NAMES_CHANNEL_HEADS) == NULL);
    CHECK_INT_EQ(rlk_names_channel_prefix("redisson_sc:", 12), 0);     /* nothing after it */
    CHECK_INT_EQ(rlk_names_channel_prefix("other:{a}", 9), 0);
}

/* Every embedded script: its roles generated from its header are known,
 * and there are numkeys of them (a variadic script: one). */
static void test_script_roles(void)
{
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *s = rlk_embedded_at(i);
        const char *roles = rlk_script_key_roles(s->name);
        char kind[64];
        const rlk_names_kind *k;
        int n = 0;

        snprintf(kind, sizeof kind, "%.*s", (int)strcspn(s->name, "/"), s->name);
        if (strcmp(kind, "fence") == 0) {
            /* The resource-side checks of fencing tokens: no lock kind, no names of their own
             * (the caller names the fence key and the data key). */
            CHECKF(roles && strcmp(roles, s->numkeys == 1 ? "fence" : "fence data") == 0,
                   "%s: roles '%s'", s->name, roles ? roles : "(none)");
            continue;
        }
        k = rlk_names_kind_find(kind);
        CHECKF(k != NULL, "%s: kind '%s' not in kinds/names.c", s->name, kind);
        CHECKF(roles != NULL, "%s: no KEYS roles generated", s->name);
        for (const char *r = roles; k && r && *r; r += strspn(r, " ")) {
            size_t w = strcspn(r, " ");
            char role[32];
            int unknown;
            char *key;

            snprintf(role, sizeof role, "%.*s", (int)w, r);
            r += w;
            key = rlk_names_key(k, role, "n", &unknown);
            CHECKF(key != NULL, "%s: KEYS role '%s' unknown to rlk_names_key", s->name, role);
            free(key);
            n++;
        }
        /* An optional key (the reentrant lock's lock-delay key) counts in numkeys, not among
         * the roles every call passes. */
        CHECKF(s->numkeys < 0 ? n == 1 : (n <= s->numkeys && n >= s->numkeys - 1),
               "%s: %d roles, numkeys %d", s->name, n, s->numkeys);
    }
    CHECK(rlk_script_key_roles("no/such") == NULL);
    CHECK_STR_EQ(rlk_script_key_roles("reentrant/acquire"), "lock waiters grant");
    CHECK_STR_EQ(rlk_script_key_roles("reentrant/renew"), "lock");
}

int main(void)
{
    RUN_TEST(test_channels);
    RUN_TEST(test_keys);
    RUN_TEST(test_channel_prefix);
    RUN_TEST(test_script_roles);
    return check_summary("test_names");
}
