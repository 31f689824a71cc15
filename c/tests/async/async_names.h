/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_names.h - the short names the async suites (async_cases.c,
 * async_elect.c, async_cluster.c, async_clkinds.c, async_closed.c, async_fence.c) write
 * their requests with, for the shared request rules and clients of async_procs.h
 * and the fenced write's outcome and lost-lock log of async_test.h. Included by those files
 * only, after async_procs.h.
 */
#ifndef RLK_TEST_ASYNC_NAMES_H
#define RLK_TEST_ASYNC_NAMES_H

#include "async_procs.h"
#include "async_test.h"

#define in_call ap_in_call          /* set around every rlk_async_* request call */
#define freed ap_freed              /* set once rlk_async_free has returned */
#define rule_breaks ap_rule_breaks  /* callbacks from inside a call, after free, or twice */
#define on_res ap_on_res
#define on_info ap_on_info
#define res_clear ap_res_clear
#define res_done ap_res_done
#define REQ AP_REQ
#define wait_res ap_wait_res
typedef ap_res res;
#define on_fence at_on_fence
#define fres_done at_fres_done
typedef at_fres fres;
#define on_lost at_on_lost
#define lost_done at_lost_done
#define lost_calls at_lost.calls
#define lost_reason at_lost.reason
#define lost_kind at_lost.kind
#define lost_at at_lost.at
#define lost_name at_lost.name
#define lost_owner at_lost.owner

#endif /* RLK_TEST_ASYNC_NAMES_H */
