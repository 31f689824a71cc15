/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elect.h - leader election (elect.c) beyond the public API: the longest
 * value the scripts accept. Its key and channel names are in names.h
 * (RLK_NAMES_CH_ELECT, RLK_NAMES_ELECT_STATE).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_ELECT_H
#define RLK_KINDS_ELECT_H

#define RLK_ELECT_VALUE_MAX 65536   /* elect/campaign, elect/proclaim: value 0..65536 bytes */
/* The term or proclaim of a candidate that does not lead (both APIs): name, holder id. */
#define RLK_ELECT_NOT_LEADING "election %s: %s does not lead (never elected, resigned, or lost)"

/* The protocol pieces the async election (async/a_elect.c) shares with
 * this file's blocking one (defined at the end of elect.c). */
#include "rlk.h"
#include "kinds/proto.h"

struct redisReply;

/* elect/leader's reply {holder, term, value, ttl_ms} into out (holder and
 * value malloc'd: rlk_elect_info_clear). RLK_OK; RLK_ERR_PROTOCOL (another
 * shape; out cleared); RLK_ERR_NOMEM. */
int rlk_elect_info_read(const struct redisReply *r, rlk_elect_info *out);
/* 1 when two reads tell the same leadership (ttl aside). */
int rlk_elect_info_same(const rlk_elect_info *a, const rlk_elect_info *b);

/* The election's row: campaign and resign (kinds/proto.h); proclaim; the
 * leader's read. Its renewal task: elect/renew with the hold's token, the term. */
extern const rlk_proto rlk_elect_row;
extern const rlk_renew_task rlk_elect_renew_task;
/* The one rule of both APIs: a leadership whose lease ends at deadline (the send time of the
 * call that set it, acquire or renewal, plus that lease; any one clock and unit) has passed by
 * now - the caller does not lead in its own eyes any more. */
int rlk_elect_lease_passed(long long now, long long deadline);
extern const rlk_proto_call rlk_elect_proclaim_call, rlk_elect_leader_call;

#endif /* RLK_KINDS_ELECT_H */
