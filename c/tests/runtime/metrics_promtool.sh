#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# metrics_promtool.sh RT_METRICS - promtool check metrics on the exposition rt_metrics
# --promtool writes (a real run, two labelled snapshots), and a control: a copy with a
# broken line must be rejected. Exit 77 (skipped) without promtool.
set -u
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not found (Debian: prometheus)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$1" --promtool "$dir/m.prom" || { echo "FAIL: rt_metrics --promtool"; exit 1; }
grep -q '^rlk_acquisitions_total{kind="lock",result="acquired",process="0"} 1$' "$dir/m.prom" ||
    { echo "FAIL: no acquisition in the exposition"; exit 1; }
grep -q '^rlk_connect_failures_total{process="1"} 0$' "$dir/m.prom" ||
    { echo "FAIL: no connect failures counter in the exposition"; exit 1; }
if ! promtool check metrics <"$dir/m.prom"; then
    echo "FAIL: promtool rejected the exposition"; exit 1
fi
# Control: promtool must reject a counter without _total and a second HELP.
{ cat "$dir/m.prom"; echo '# HELP rlk_waits_total again'; } >"$dir/bad.prom"
if promtool check metrics <"$dir/bad.prom" >/dev/null 2>&1; then
    echo "FAIL: control: promtool accepted a broken exposition"; exit 1
fi
echo "ok: promtool check metrics accepts $(wc -l <"$dir/m.prom") lines"
