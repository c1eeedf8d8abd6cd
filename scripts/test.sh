#!/usr/bin/env bash
# make test's runner: every package's tests, and e2e's Dolt suite in a test binary of its own
# beside them. The Dolt tests share one Dolt server, so they run one after another, and mostly
# wait on Dolt (its shutdown with a replica attached, its 30 s heartbeats): in e2e's own binary
# that time would add to the MariaDB tests' serial time. Either run failing fails the command.
# The Dolt run's output is printed when it ends.
set -uo pipefail

go=${GO:-go}
flags=(-race -count=1 -timeout "${TEST_TIMEOUT:-15m}")
dolt_tests='^TestDolt'

dolt_log=$(mktemp)
"$go" test "${flags[@]}" -run "$dolt_tests" ./e2e >"$dolt_log" 2>&1 &
dolt_pid=$!
trap 'kill "$dolt_pid" 2>/dev/null; rm -f "$dolt_log"' EXIT

# -parallel 5: e2e's parallel tests (the three takeover variants and the soak, which mostly wait
# on 60 s cut-offs) all run side by side even on 2 cores.
"$go" test "${flags[@]}" -parallel 5 -skip "$dolt_tests" ./...
rest=$?

wait "$dolt_pid"
dolt=$?
echo "=== e2e's Dolt suite (${dolt_tests}), run beside the rest:"
cat "$dolt_log"
if ((rest != 0 || dolt != 0)); then
	exit 1
fi
