/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bundle.h - reading a bundle directory (bundle.c) into a script set.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_BUNDLE_H
#define RLK_BUNDLE_H

#include <stddef.h>

#include "client/scripts.h"

/* Reads dir/manifest.tsv and every dir/<name>.lua it lists, checking each
 * file's SHA-1 against the manifest. RLK_ERR_BUNDLE (message in err, naming
 * the file and line) on any inconsistency, RLK_ERR_NOMEM when out of memory. */
int rlk_bundle_read(const char *dir, rlk_script_set *set, char *err, size_t errlen);

#endif /* RLK_BUNDLE_H */
