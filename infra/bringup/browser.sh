# shellcheck shell=bash
# The browser the web UI's tests drive (tests/browser, playwright-core): Debian's chromium at
# /usr/bin/chromium (GATEHOUSE_CHROMIUM to use another). Playwright's own browser download cannot
# work on these machines. Sourced by ensure-infra.sh.

ensure_browser() {
  local bin="${GATEHOUSE_CHROMIUM:-/usr/bin/chromium}"
  if [ -x "$bin" ]; then
    log "browser   $bin  ok"
    return
  fi
  if [ -n "${GATEHOUSE_CHROMIUM:-}" ]; then
    missing "browser: GATEHOUSE_CHROMIUM=$bin is not an executable"
    return
  fi
  if [ "$CHECK_ONLY" = 1 ]; then
    missing "browser: chromium (apt-get install chromium)"
    return
  fi
  apt_install chromium
  [ -x "$bin" ] || die "$bin still missing after apt-get install chromium"
  log "browser   $bin  ok (installed chromium)"
}
