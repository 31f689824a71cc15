#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# metrics_promtool.sh PROGRAM LINE... - promtool check metrics on the Prometheus text that the
# `metrics` case of an async test program writes to $RLK_TEST_PROM_OUT after a known run
# (async_cases: acquisitions, a busy try, a hold, renewals, a lost lock; async_fence: fenced
# writes through both APIs). Each LINE must stand in the text as it is. A control: a copy with
# a broken line must be rejected. Exit 77 (skipped) without promtool.
set -u
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not found (Debian: prometheus)"; exit 77; }
prog=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
RLK_TEST_PROM_OUT="$dir/m.prom" "$prog" metrics || { echo "FAIL: $prog metrics"; exit 1; }
for line in "$@"; do
    grep -qxF "$line" "$dir/m.prom" || { echo "FAIL: no line '$line' in the exposition"; exit 1; }
done
if ! promtool check metrics <"$dir/m.prom"; then
    echo "FAIL: promtool rejected the exposition"; exit 1
fi
{ cat "$dir/m.prom"; echo '# HELP rlk_waits_total again'; } >"$dir/bad.prom"
if promtool check metrics <"$dir/bad.prom" >/dev/null 2>&1; then
    echo "FAIL: control: promtool accepted a broken exposition"; exit 1
fi
echo "ok: promtool check metrics accepts $(wc -l <"$dir/m.prom") lines of $(basename "$prog")'s metrics"
