/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elect.h - the election's key and channel names beyond the public API, for
 * the CLI's and tests' readers.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_ELECT_H
#define RLK_KINDS_ELECT_H

#define RLK_ELECT_STATE_SUFFIX "elect"              /* the record: {name}:elect */
#define RLK_ELECT_CHANNEL "rlk_elect__channel"      /* changes: rlk_elect__channel:{name} */

#endif /* RLK_KINDS_ELECT_H */
