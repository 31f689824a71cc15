#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# metrics_promtool.sh ASYNC_CASES - promtool check metrics on the Prometheus text of an async
# client's metrics (the `metrics` case of async_cases writes it to $RLK_TEST_PROM_OUT after a
# real run: acquisitions, a busy try, a hold, renewals, a lost lock), and a control: a copy
# with a broken line must be rejected. Exit 77 (skipped) without promtool.
set -u
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not found (Debian: prometheus)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
RLK_TEST_PROM_OUT="$dir/m.prom" "$1" metrics || { echo "FAIL: async_cases metrics"; exit 1; }
grep -q '^rlk_acquisitions_total{kind="lock",result="acquired"} 2$' "$dir/m.prom" ||
    { echo "FAIL: no async acquisition in the exposition"; exit 1; }
if ! promtool check metrics <"$dir/m.prom"; then
    echo "FAIL: promtool rejected the exposition"; exit 1
fi
{ cat "$dir/m.prom"; echo '# HELP rlk_waits_total again'; } >"$dir/bad.prom"
if promtool check metrics <"$dir/bad.prom" >/dev/null 2>&1; then
    echo "FAIL: control: promtool accepted a broken exposition"; exit 1
fi
echo "ok: promtool check metrics accepts $(wc -l <"$dir/m.prom") lines of an async client's metrics"
