#!/usr/bin/env bash
# The Compose CLI for the tests (tests/integration/infra.test.ts runs `docker compose config`,
# Compose's own loader, on docker-compose.yml; it needs no Docker engine). Uses `docker compose`
# when the machine has it; otherwise takes the statically linked compose v2 binary out of Debian
# 13's docker-compose package (Debian 12 only packages compose v1, which rejects today's file
# format) into .state/tools/docker-compose. The machine's apt sources are not touched: the index
# and the .deb go to a private apt state under .state/. Idempotent; quick once done.
set -Eeuo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=pgvector.sh
. "$HERE/pgvector.sh" # debian_mirror

TOOLS="$ROOT/.state/tools"
BIN="$TOOLS/docker-compose"

if docker compose version >/dev/null 2>&1; then
  log "compose   docker compose  ok"
  exit 0
fi
if [ -x "$BIN" ] && "$BIN" version >/dev/null 2>&1; then
  log "compose   $BIN  ok"
  exit 0
fi

mirror=$(debian_mirror) || true
[ -n "$mirror" ] || die "cannot find this machine's Debian mirror in /etc/apt; set GATEHOUSE_DEBIAN_MIRROR"
apt_dir="$ROOT/.state/apt-trixie"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$TOOLS"
printf 'deb %s trixie main\n' "$mirror" >"$apt_dir/sources.list"
opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State=$apt_dir" -o "Dir::Cache=$apt_dir" -o "APT::Sandbox::User=root")
log "compose CLI missing: fetching Debian 13's docker-compose package (first run only, log: $INFRA_LOG)"
timeout 300 apt-get "${opts[@]}" update >>"$INFRA_LOG" 2>&1 || die "apt-get update for trixie failed (see $INFRA_LOG)"
tmp=$(mktemp -d /tmp/gatehouse-compose.XXXXXX)
(cd "$tmp" && timeout 300 apt-get "${opts[@]}" download docker-compose) >>"$INFRA_LOG" 2>&1 ||
  die "apt-get download docker-compose failed (see $INFRA_LOG)"
dpkg -x "$tmp"/docker-compose_*.deb "$tmp/x"
install -m 0755 "$tmp/x/usr/libexec/docker/cli-plugins/docker-compose" "$BIN"
rm -rf "$tmp" "$apt_dir"
"$BIN" version >/dev/null 2>&1 || die "$BIN does not run"
log "compose   $BIN  ok (installed $("$BIN" version --short 2>/dev/null))"
