#!/usr/bin/env bash
# Make sure this machine has what the Gatehouse stack runs on: NATS (JetStream), PostgreSQL
# (+ project databases + pgvector), Redis, espeak-ng and ffmpeg, chromium (browser tests),
# slapd + ldap-utils (LDAP tests), python3 with pytest (Qdrant's own suite). Idempotent; fast when
# everything is already there. Called by scripts/start and scripts/test on every run.
#
#   infra/bringup/ensure-infra.sh           check, install and start what is missing
#   infra/bringup/ensure-infra.sh --check   only report; exit 1 if anything is missing
#
# Env: NATS_URL, DATABASE_URL, REDIS_URL (default: local servers), GATEHOUSE_EXTRA_DBS
# (default gatehouse_test), GATEHOUSE_INFRA_WAIT (seconds, default 20). See README.md here.
set -Eeuo pipefail
trap 'rc=$?; printf "[infra] ERROR: unexpected failure (exit %s) at %s:%s: %s\n" "$rc" "${BASH_SOURCE[0]##*/}" "$LINENO" "$BASH_COMMAND" >&2' ERR
# shellcheck source-path=SCRIPTDIR

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

CHECK_ONLY=0
for arg in "$@"; do
  case $arg in
  --check) CHECK_ONLY=1 ;;
  -h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  *)
    echo "[infra] unknown argument: $arg (try --help)" >&2
    exit 2
    ;;
  esac
done

# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=speech.sh
. "$HERE/speech.sh"
# shellcheck source=nats.sh
. "$HERE/nats.sh"
# shellcheck source=redis.sh
. "$HERE/redis.sh"
# shellcheck source=postgres.sh
. "$HERE/postgres.sh"
# shellcheck source=pgvector.sh
. "$HERE/pgvector.sh"
# shellcheck source=browser.sh
. "$HERE/browser.sh"
# shellcheck source=ldap.sh
. "$HERE/ldap.sh"
# shellcheck source=python.sh
. "$HERE/python.sh"

t0=$(now_ms)
ensure_speech_tools
ensure_browser
ensure_ldap_tools
ensure_python_tests
ensure_nats
ensure_redis
ensure_postgres
elapsed=$(($(now_ms) - t0))

if [ "$CHECK_ONLY" = 1 ] && [ "$MISSING" -gt 0 ]; then
  log "check failed: run infra/bringup/ensure-infra.sh (without --check) to install and start what is missing"
  exit 1
fi
log "all infrastructure ready (${elapsed} ms)"
