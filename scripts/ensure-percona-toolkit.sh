#!/usr/bin/env bash
# Makes sure pt-online-schema-change is available: e2e/onlineddl_test.go runs it on a real source
# to check what vplayer does with an online schema change. When it is missing and we are root
# with apt-get, installs Debian's percona-toolkit package (it ships the tool and the Perl DBI
# driver it needs) without its recommends; otherwise says what to install and fails. Prints the
# version on success.
set -euo pipefail

report() {
	echo "ensure-percona-toolkit: using $(command -v pt-online-schema-change) ($(pt-online-schema-change --version 2>&1 | head -n 1))"
}

if command -v pt-online-schema-change >/dev/null 2>&1; then
	report
	exit 0
fi

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "ensure-percona-toolkit: pt-online-schema-change not found; installing percona-toolkit" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends percona-toolkit
	if command -v pt-online-schema-change >/dev/null 2>&1; then
		report
		exit 0
	fi
	echo "ensure-percona-toolkit: percona-toolkit installed but pt-online-schema-change still not on PATH" >&2
	exit 1
fi

cat >&2 <<'MSG'
ensure-percona-toolkit: pt-online-schema-change not found on PATH.
The online schema change tests run it against a real MariaDB source:
  - install it:  sudo apt-get install percona-toolkit   (Debian/Ubuntu)
  - or put pt-online-schema-change (Percona Toolkit 3.x, with Perl's DBD::mysql) on PATH.
MSG
exit 1
