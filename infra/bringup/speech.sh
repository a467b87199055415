# shellcheck shell=bash
# Speech tools used by the speech worker. Sourced by ensure-infra.sh.

SPEECH_TOOLS=(espeak-ng ffmpeg) # command name == Debian package name for both

ensure_speech_tools() {
  local t todo=()
  for t in "${SPEECH_TOOLS[@]}"; do command -v "$t" >/dev/null 2>&1 || todo+=("$t"); done
  if [ "${#todo[@]}" -eq 0 ]; then
    log "speech    ${SPEECH_TOOLS[*]}  ok"
    return
  fi
  if [ "$CHECK_ONLY" = 1 ]; then
    missing "speech tools: ${todo[*]}"
    return
  fi
  apt_install "${todo[@]}"
  for t in "${todo[@]}"; do command -v "$t" >/dev/null 2>&1 || die "$t still missing after apt-get install $t"; done
  log "speech    ${SPEECH_TOOLS[*]}  ok (installed ${todo[*]})"
}
