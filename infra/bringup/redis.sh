# shellcheck shell=bash
# Redis. Sourced by ensure-infra.sh.

# redis_alive HOST PORT: 0 = Redis answers PING (PONG or an auth error), 1 = nothing, 2 = something else.
redis_alive() {
  case $(probe_line "$1" "$2" 'PING\r\n') in [+-]*) return 0 ;; esac
  port_open "$1" "$2" && return 2
  return 1
}

ensure_redis() {
  local url=${REDIS_URL:-redis://127.0.0.1:6379} shown
  parse_url "$url" 6379
  local host=$URL_HOST port=$URL_PORT
  shown=$(mask_url "$url")

  local alive=0
  if [ "$URL_SCHEME" = rediss ]; then
    port_open "$host" "$port" || alive=1 # TLS: only the TCP port can be checked from bash
  else
    redis_alive "$host" "$port" || alive=$?
  fi
  if [ "$alive" = 0 ]; then
    log "redis     $shown  ok"
    return
  fi
  if [ "$alive" = 2 ]; then
    if [ "$CHECK_ONLY" = 1 ]; then missing "something listens at $host:$port but it is not Redis"; return; fi
    die "something listens at $host:$port but it does not answer PING like Redis. Fix REDIS_URL."
  fi
  if ! is_local_host "$host"; then
    if [ "$CHECK_ONLY" = 1 ]; then missing "Redis at $shown does not answer"; return; fi
    die "Redis at $shown does not answer. Start it there or point REDIS_URL at a running server."
  fi
  if [ "$CHECK_ONLY" = 1 ]; then
    command -v redis-server >/dev/null 2>&1 || missing "package redis-server"
    missing "Redis is not running at $shown"
    return
  fi

  take_lock
  if redis_alive "$host" "$port"; then # a concurrent run started it meanwhile
    log "redis     $shown  ok"
    return
  fi
  if ! command -v redis-server >/dev/null 2>&1; then
    apt_install redis-server
    # The package may have started its own server on the default port.
    if redis_alive "$host" "$port"; then
      log "redis     $shown  ok (started by the package)"
      return
    fi
  fi
  as_root mkdir -p /var/lib/redis /var/log/redis
  log "starting redis-server on 127.0.0.1:$port (no persistence)"
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$port" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/gatehouse.log </dev/null >/dev/null ||
    die "could not start redis-server (see /var/log/redis/gatehouse.log)"
  wait_port Redis "$host" "$port" "See /var/log/redis/gatehouse.log; start it by hand with: redis-server --port $port --daemonize yes"
  log "redis     $shown  ok (started)"
}
