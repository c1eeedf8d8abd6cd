#!/usr/bin/env bash
# Makes sure the pinned dolt (a MySQL-compatible server the tests use as a MySQL-flavour binlog
# source) is available, as internal/mysqld looks for it: $VPLAYER_DOLT, else dolt on PATH, in
# $GOBIN, $GOPATH/bin or the user's cache directory, reporting the pinned version. When none is
# found it builds it with go install into the cache directory (cgo; about 5 minutes on 2 cores,
# once). Without a go toolchain it says so and exits 0: the Dolt tests then skip, or fail when
# VPLAYER_REQUIRE_MYSQL=1.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Keep in step with internal/mysqld/doltbin.go.
module=$(sed -n 's/^\tDoltModule *= "\(.*\)"$/\1/p' internal/mysqld/doltbin.go)
module_version=$(sed -n 's/^\tDoltModuleVersion *= "\(.*\)"$/\1/p' internal/mysqld/doltbin.go)
version=$(sed -n 's/^\tDoltVersion *= "\(.*\)"$/\1/p' internal/mysqld/doltbin.go)
if [[ -z "$module" || -z "$module_version" || -z "$version" ]]; then
	echo "ensure-dolt: cannot read the pinned version from internal/mysqld/doltbin.go" >&2
	exit 1
fi

GO=$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vplayer/dolt-$version"

# version_of prints what `dolt version` reports, without touching the user's home.
version_of() {
	local root out
	root=$(mktemp -d)
	mkdir -p "$root/.dolt"
	echo '{"metrics.disabled":"true"}' >"$root/.dolt/config_global.json"
	out=$(DOLT_ROOT_PATH="$root" DOLT_DISABLE_EVENT_FLUSH=1 "$1" version 2>/dev/null | sed -n 's/^dolt version //p' | head -n 1) || true
	rm -rf "$root"
	echo "$out"
}

if [[ -n "${VPLAYER_DOLT:-}" ]]; then
	if [[ "$(version_of "$VPLAYER_DOLT")" == "$version" ]]; then
		echo "ensure-dolt: using $VPLAYER_DOLT (dolt $version)"
		exit 0
	fi
	echo "ensure-dolt: VPLAYER_DOLT=$VPLAYER_DOLT is not dolt $version" >&2
	exit 1
fi

candidates=()
if p=$(command -v dolt 2>/dev/null); then candidates+=("$p"); fi
if [[ -n "${GOBIN:-}" ]]; then candidates+=("$GOBIN/dolt"); fi
IFS=: read -ra gopaths <<<"${GOPATH:-$HOME/go}"
for d in "${gopaths[@]}"; do candidates+=("$d/bin/dolt"); done
candidates+=("$cache/dolt")
for p in "${candidates[@]}"; do
	if [[ -x "$p" && "$(version_of "$p")" == "$version" ]]; then
		echo "ensure-dolt: using $p (dolt $version)"
		exit 0
	fi
done

if [[ ! -x "$GO" ]]; then
	echo "ensure-dolt: no dolt $version found and no go toolchain to build it; the Dolt tests will skip" >&2
	exit 0
fi
echo "ensure-dolt: no dolt $version found; building $module@$module_version into $cache (about 5 minutes, once)" >&2
mkdir -p "$cache"
start=$(date +%s)
(cd "$cache" && GOBIN="$cache" CGO_ENABLED=1 "$GO" install "$module@$module_version")
echo "ensure-dolt: built $cache/dolt (dolt $(version_of "$cache/dolt")) in $(($(date +%s) - start))s"
