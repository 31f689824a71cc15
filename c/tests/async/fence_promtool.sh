#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fence_promtool.sh ASYNC_FENCE - promtool check metrics on the Prometheus text of the fenced-write
# metrics (the `metrics` case of async_fence writes it to $RLK_TEST_PROM_OUT after known writes
# through both APIs), and a control: a copy with a sample of the family repeated must be rejected.
# Exit 77 (skipped) without promtool.
set -u
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not found (Debian: prometheus)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
RLK_TEST_PROM_OUT="$dir/m.prom" "$1" metrics || { echo "FAIL: async_fence metrics"; exit 1; }
grep -q '^rlk_fence_writes_total{result="refused"} 3$' "$dir/m.prom" ||
    { echo "FAIL: no refused fenced writes in the exposition"; exit 1; }
grep -q '^rlk_name_fence_writes_total{name="{am}:fence",result="accepted"} 3$' "$dir/m.prom" ||
    { echo "FAIL: no watched name's fenced writes in the exposition"; exit 1; }
if ! promtool check metrics <"$dir/m.prom"; then
    echo "FAIL: promtool rejected the exposition"; exit 1
fi
{ cat "$dir/m.prom"; echo '# TYPE rlk_fence_writes_total counter'; } >"$dir/bad.prom"
if promtool check metrics <"$dir/bad.prom" >/dev/null 2>&1; then
    echo "FAIL: control: promtool accepted a broken exposition"; exit 1
fi
echo "ok: promtool check metrics accepts $(wc -l <"$dir/m.prom") lines with the fenced-write metrics"
