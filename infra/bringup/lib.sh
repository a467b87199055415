# shellcheck shell=bash
# Shared helpers for ensure-infra.sh. Sourced, not executed.
# Every wait in here is bounded (GATEHOUSE_INFRA_WAIT seconds, default 20).

INFRA_WAIT=${GATEHOUSE_INFRA_WAIT:-20}
INFRA_LOCK_FILE=${GATEHOUSE_INFRA_LOCK:-/tmp/gatehouse-infra.lock}
INFRA_LOG=${GATEHOUSE_INFRA_LOG:-/tmp/gatehouse-infra.log}
CHECK_ONLY=${CHECK_ONLY:-0}
MISSING=0 # count of missing items (--check)
APT_UPDATED=0
LOCK_HELD=0

# start-stop-daemon, pg_ctlcluster & co. live in sbin.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH="$PATH:/usr/sbin:/sbin" ;; esac

log() { printf '[infra] %s\n' "$*" >&2; }
die() {
  printf '[infra] ERROR: %s\n' "$*" >&2
  exit 1
}
# In --check mode: note what is missing and carry on; the script exits 1 at the end.
missing() {
  log "MISSING: $*"
  MISSING=$((MISSING + 1))
}

# Run a command as root: directly when root, else through sudo when it exists.
# fd 9 (the lock) is closed for the command: a daemon it starts must not hold the lock forever.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@" 9>&-
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@" 9>&-
  else
    die "need root for: $* (run as root or install sudo)"
  fi
}

# Serialise the slow, mutating paths (apt, starting services, builds) between concurrent runs.
# The fast path (everything present) never takes it.
take_lock() {
  [ "$LOCK_HELD" -eq 1 ] && return 0
  command -v flock >/dev/null 2>&1 || {
    LOCK_HELD=1
    return 0
  }
  exec 9>>"$INFRA_LOCK_FILE" || die "cannot open lock file $INFRA_LOCK_FILE"
  if ! flock -n 9; then
    log "another ensure-infra run is busy; waiting for it (max 900 s)"
    flock -w 900 9 || die "timed out waiting for the lock $INFRA_LOCK_FILE"
  fi
  LOCK_HELD=1
}

now_ms() {
  local t=${EPOCHREALTIME/[.,]/}
  printf '%s' "$((t / 1000))"
}

# ---- URLs -----------------------------------------------------------------------------------
# parse_url URL DEFAULT_PORT -> URL_SCHEME URL_USER URL_PASSWORD (decoded) URL_HAS_PASSWORD
#   URL_USERINFO (raw) URL_HOST (no brackets) URL_HOSTPORT (raw authority host[:port])
#   URL_PORT URL_PATH (no leading /) URL_QUERY
parse_url() {
  local url=$1 default_port=$2 rest authority
  URL_SCHEME="" URL_USERINFO="" URL_USER="" URL_PASSWORD="" URL_HAS_PASSWORD=0
  URL_HOST="" URL_PORT="" URL_PATH="" URL_QUERY="" URL_HOSTPORT=""
  rest=$url
  case $rest in *://*)
    URL_SCHEME=${rest%%://*}
    rest=${rest#*://}
    ;;
  esac
  rest=${rest%%#*}
  case $rest in *\?*)
    URL_QUERY=${rest#*\?}
    rest=${rest%%\?*}
    ;;
  esac
  authority=${rest%%/*}
  case $rest in */*) URL_PATH=${rest#*/} ;; esac
  case $authority in *@*)
    URL_USERINFO=${authority%@*}
    authority=${authority##*@}
    ;;
  esac
  if [ -n "$URL_USERINFO" ]; then
    URL_USER=$(url_decode "${URL_USERINFO%%:*}")
    case $URL_USERINFO in *:*)
      URL_PASSWORD=$(url_decode "${URL_USERINFO#*:}")
      URL_HAS_PASSWORD=1
      ;;
    esac
  fi
  URL_HOSTPORT=$authority
  case $authority in
  \[*)
    URL_HOST=${authority#\[}
    URL_HOST=${URL_HOST%%\]*}
    case $authority in *\]:*) URL_PORT=${authority##*\]:} ;; esac
    ;;
  *:*)
    URL_HOST=${authority%%:*}
    URL_PORT=${authority#*:}
    ;;
  *) URL_HOST=$authority ;;
  esac
  [ -n "$URL_HOST" ] || URL_HOST=127.0.0.1
  [ -n "$URL_PORT" ] || URL_PORT=$default_port
  case $URL_PORT in *[!0-9]* | '') die "bad port in URL: $(mask_url "$url")" ;; esac
}

url_decode() {
  local s=${1//\\/\\\\}
  printf '%b' "${s//%/\\x}"
}

# Print a URL with any password (or a bare NATS/Redis token) replaced by ***.
mask_url() {
  local url=$1 scheme="" rest userinfo
  case $url in *://*)
    scheme="${url%%://*}://"
    rest=${url#*://}
    ;;
  *) rest=$url ;;
  esac
  local authority=${rest%%/*} tail=""
  [ "$authority" != "$rest" ] && tail="/${rest#*/}"
  case $authority in *@*) ;; *)
    printf '%s' "$url"
    return
    ;;
  esac
  userinfo=${authority%@*}
  case $userinfo in
  *:*) userinfo="${userinfo%%:*}:***" ;;
  *) case $scheme in postgres* | "") ;; *) userinfo="***" ;; esac ;;
  esac
  printf '%s%s@%s%s' "$scheme" "$userinfo" "${authority##*@}" "$tail"
}

is_local_host() {
  case $1 in
  localhost | ::1 | 127.*) return 0 ;;
  *) return 1 ;;
  esac
}

# ---- network ---------------------------------------------------------------------------------
# port_open HOST PORT: true when something accepts a TCP connection (1 s max).
port_open() {
  timeout 1 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# wait_port NAME HOST PORT FIX: bounded wait until the port answers, else fail naming the fix.
wait_port() {
  local name=$1 host=$2 port=$3 fix=$4 deadline=$((SECONDS + INFRA_WAIT))
  while ! port_open "$host" "$port"; do
    [ "$SECONDS" -lt "$deadline" ] || die "$name did not answer on $host:$port within ${INFRA_WAIT}s. $fix"
    sleep 0.2
  done
}

# ---- packages --------------------------------------------------------------------------------
pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}

apt_update() {
  [ "$APT_UPDATED" -eq 1 ] && return 0
  log "apt-get update"
  if ! as_root apt-get update -o DPkg::Lock::Timeout=300 >>"$INFRA_LOG" 2>&1; then
    log "warning: apt-get update reported errors (see $INFRA_LOG); continuing with the indexes we have"
  fi
  APT_UPDATED=1
}

# apt_install PKG...: installs only the packages that are missing; updates the index first, once.
apt_install() {
  local p todo=()
  for p in "$@"; do pkg_installed "$p" || todo+=("$p"); done
  [ "${#todo[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install by hand: ${todo[*]}"
  take_lock
  apt_update
  log "installing ${todo[*]} (apt, log: $INFRA_LOG)"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${todo[@]}" >>"$INFRA_LOG" 2>&1; then
    tail -n 20 "$INFRA_LOG" >&2
    die "apt-get install ${todo[*]} failed (full log: $INFRA_LOG)"
  fi
}

# ---- protocol probes ---------------------------------------------------------------------------
# An open TCP port is not proof enough (a proxy or another program may hold it), so the probes
# below also check that the right protocol answers. All return 0 = it answers, 1 = nothing
# listens, 2 = something else listens.

# probe_line HOST PORT [SEND]: connect, optionally send SEND, print the first line received.
probe_line() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2" || exit 1
    [ -n "$3" ] && printf "%b" "$3" >&3
    IFS= read -r -t 1 line <&3 && printf "%s" "$line"' _ "$1" "$2" "${3:-}" 2>/dev/null || true
}
