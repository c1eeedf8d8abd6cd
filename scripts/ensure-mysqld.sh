#!/usr/bin/env bash
# Makes sure a MariaDB or MySQL server binary is available to the tests (internal/mysqld looks
# for it the same way): $VPLAYER_MYSQLD, else mariadbd or mysqld on PATH, /usr/sbin or
# /usr/local/sbin. When none is found and we are root with apt-get, installs mariadb-server;
# otherwise says what to install and fails. Prints the binary's path and version on success.
set -euo pipefail

find_server() {
	local name dir p
	for name in mariadbd mysqld; do
		if p=$(command -v "$name" 2>/dev/null); then
			echo "$p"
			return 0
		fi
		for dir in /usr/sbin /usr/local/sbin; do
			if [[ -x "$dir/$name" ]]; then
				echo "$dir/$name"
				return 0
			fi
		done
	done
	return 1
}

report() {
	echo "ensure-mysqld: using $1 ($("$1" --no-defaults --version 2>&1 | head -n 1))"
}

if [[ -n "${VPLAYER_MYSQLD:-}" ]]; then
	if [[ -f "$VPLAYER_MYSQLD" && -x "$VPLAYER_MYSQLD" ]]; then
		report "$VPLAYER_MYSQLD"
		exit 0
	fi
	echo "ensure-mysqld: VPLAYER_MYSQLD=$VPLAYER_MYSQLD is not an executable file" >&2
	exit 1
fi

if server=$(find_server); then
	report "$server"
	exit 0
fi

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "ensure-mysqld: no mariadbd or mysqld found; installing mariadb-server" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y mariadb-server
	if server=$(find_server); then
		report "$server"
		exit 0
	fi
	echo "ensure-mysqld: mariadb-server installed but mariadbd still not found" >&2
	exit 1
fi

cat >&2 <<'MSG'
ensure-mysqld: no mariadbd or mysqld found on PATH, /usr/sbin or /usr/local/sbin.
The tests start their own throw-away servers and need the server binary. Either:
  - install MariaDB:  sudo apt-get install mariadb-server   (Debian/Ubuntu)
  - or point VPLAYER_MYSQLD at a mariadbd (10.6+) or mysqld (8.x) binary:
        VPLAYER_MYSQLD=/path/to/mariadbd make test
MSG
exit 1
