# shellcheck shell=bash
# NATS with JetStream. Sourced by ensure-infra.sh.

NATS_BIN=/usr/sbin/nats-server

# nats_alive HOST PORT: 0 = a NATS server answers (its INFO line), 1 = nothing, 2 = something else.
nats_alive() {
  case $(probe_line "$1" "$2") in INFO*) return 0 ;; esac
  port_open "$1" "$2" && return 2
  return 1
}

# nats_jetstream HOST PORT -> prints on | off | unknown
nats_jetstream() {
  local host=$1 port=$2 info mon
  info=$(probe_line "$host" "$port")
  case $info in
  INFO*'"jetstream":true'*) echo on; return ;;
  INFO*) echo off; return ;;
  esac
  # No plain INFO (e.g. TLS-first): ask the monitoring port when one answers.
  mon=${NATS_MONITOR_PORT:-8222}
  if command -v curl >/dev/null 2>&1 && port_open "$host" "$mon"; then
    if curl -fsS -m 2 "http://$host:$mon/varz" 2>/dev/null | grep -q '"jetstream": *{[^}]*"config"'; then
      echo on
      return
    fi
  fi
  echo unknown
}

ensure_nats() {
  local url=${NATS_URL:-nats://127.0.0.1:4222}
  local first=${url%%,*} shown
  parse_url "$first" 4222
  local host=$URL_HOST port=$URL_PORT
  shown=$(mask_url "$first")

  local alive=0
  nats_alive "$host" "$port" || alive=$?
  if [ "$alive" = 2 ]; then
    if [ "$CHECK_ONLY" = 1 ]; then missing "something listens at $host:$port but it is not NATS"; return; fi
    die "something listens at $host:$port but it does not answer like NATS (no INFO line; TLS-first servers are not supported here). Fix NATS_URL."
  fi
  if [ "$alive" = 1 ]; then
    if ! is_local_host "$host"; then
      if [ "$CHECK_ONLY" = 1 ]; then missing "NATS at $shown does not answer"; return; fi
      die "NATS at $shown does not answer. Start it there or point NATS_URL at a running server."
    fi
    if [ "$CHECK_ONLY" = 1 ]; then
      [ -x "$NATS_BIN" ] || missing "package nats-server"
      missing "NATS is not running at $shown"
      return
    fi
    take_lock
    if ! nats_alive "$host" "$port"; then
      if [ ! -x "$NATS_BIN" ]; then
        apt_install nats-server
        # On systemd machines the package starts its own server on 4222 without JetStream;
        # we just installed it, so replace it with ours.
        if [ -d /run/systemd/system ] && systemctl is-active -q nats-server 2>/dev/null; then
          log "stopping the packaged nats-server service (no JetStream); starting ours instead"
          as_root systemctl disable --now nats-server >/dev/null 2>&1 || true
        fi
      fi
      local bind=127.0.0.1 store=/var/lib/nats-server logf=/var/log/nats-server.log
      [ "$host" = "::1" ] && bind=::1
      # A second local server on another port must not share the JetStream store (or the log).
      if [ "$port" != 4222 ]; then
        store=/var/lib/nats-server-$port
        logf=/var/log/nats-server-$port.log
      fi
      as_root mkdir -p "$store" /run
      log "starting nats-server on $bind:$port (JetStream, store $store)"
      # --pidfile scopes --oknodo to this port: a nats-server on another port must not count.
      as_root start-stop-daemon --start --oknodo --background \
        --make-pidfile --pidfile "/run/gatehouse-nats-$port.pid" \
        --exec "$NATS_BIN" -- -a "$bind" -p "$port" -js -sd "$store" -l "$logf" ||
        die "could not start nats-server (see $logf)"
      wait_port NATS "$host" "$port" "See $logf; start it by hand with: $NATS_BIN -a $bind -p $port -js -sd $store"
    fi
  fi

  case $(nats_jetstream "$host" "$port") in
  on) log "nats      $shown  ok (JetStream on)" ;;
  off)
    if [ "$CHECK_ONLY" = 1 ]; then missing "NATS at $shown runs without JetStream"; return; fi
    die "NATS at $shown runs without JetStream. Restart it with -js (e.g. nats-server -js -sd /var/lib/nats-server)."
    ;;
  *) log "nats      $shown  ok (JetStream not checked here; the NATS setup code checks it)" ;;
  esac
}
