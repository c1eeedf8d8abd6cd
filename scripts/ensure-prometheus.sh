#!/usr/bin/env bash
# Makes sure promtool and the prometheus server binary are available: the rule tests run promtool
# and e2e/prometheus_test.go starts a real Prometheus. When either is missing and we are root with
# apt-get, installs Debian's prometheus package (it ships both) without its recommends; otherwise
# says what to install and fails. Prints the versions on success.
set -euo pipefail

report() {
	echo "ensure-prometheus: using $(command -v prometheus) and $(command -v promtool) ($(promtool --version 2>&1 | head -n 1))"
}

if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
	report
	exit 0
fi

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "ensure-prometheus: promtool or prometheus not found; installing prometheus" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends prometheus
	if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
		report
		exit 0
	fi
	echo "ensure-prometheus: prometheus installed but promtool or prometheus still not on PATH" >&2
	exit 1
fi

cat >&2 <<'MSG'
ensure-prometheus: promtool or prometheus not found on PATH.
The alert rule tests need promtool, and the end-to-end scrape test the prometheus server:
  - install them:  sudo apt-get install prometheus   (Debian/Ubuntu)
  - or put both binaries of a Prometheus release on PATH.
MSG
exit 1
