# shellcheck shell=bash
# Python with pytest, requests and jsonschema: what Qdrant's own HTTP API test suite needs
# (../shared/conformance/qdrant/run, driven by tests/integration/vector-conformance.test.ts).
# Debian's packages only; nothing from other registries. Sourced by ensure-infra.sh.

ensure_python_tests() {
  if python3 -c 'import pytest, requests, jsonschema' >/dev/null 2>&1; then
    log "python    pytest requests jsonschema  ok"
    return
  fi
  if [ "$CHECK_ONLY" = 1 ]; then
    missing "python: pytest requests jsonschema (apt-get install python3-pytest python3-requests python3-jsonschema)"
    return
  fi
  apt_install python3-pytest python3-requests python3-jsonschema
  python3 -c 'import pytest, requests, jsonschema' >/dev/null 2>&1 ||
    die "python3 still lacks pytest/requests/jsonschema after apt-get install python3-pytest python3-requests python3-jsonschema"
  log "python    pytest requests jsonschema  ok (installed)"
}
