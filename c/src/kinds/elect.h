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

#endif /* RLK_KINDS_ELECT_H */
