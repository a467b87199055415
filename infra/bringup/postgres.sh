# shellcheck shell=bash
# PostgreSQL: server, login, project databases, pgvector. Sourced by ensure-infra.sh.

PG_DEFAULT_URL=postgres://postgres@127.0.0.1:5432/gatehouse
PG_FRESH=0 # 1 when this run installed or created PostgreSQL
PG_VER="" PG_CLUSTER="" PG_STATUS=""

pg_parse() {
  local url=$1
  parse_url "$url" 5432
  PG_SCHEME=${URL_SCHEME:-postgres}
  PG_HOST=$URL_HOST PG_PORT=$URL_PORT PG_HOSTPORT=${URL_HOSTPORT:-127.0.0.1}
  PG_USER_RAW=${URL_USERINFO%%:*}
  PG_HAS_PASSWORD=$URL_HAS_PASSWORD PG_PASSWORD=$URL_PASSWORD PG_QUERY=$URL_QUERY
  PG_DB=${URL_PATH:-${URL_USER:-postgres}}
}

# DATABASE_URL pointed at another database, without the password (that goes in PGPASSWORD,
# so it never shows up in a process list).
pg_url() {
  printf '%s://%s%s/%s%s' "$PG_SCHEME" "${PG_USER_RAW:+$PG_USER_RAW@}" "$PG_HOSTPORT" "$1" "${PG_QUERY:+?$PG_QUERY}"
}

# pg_psql DB psql-args...: quiet, unaligned, no prompts, bounded connect time.
pg_psql() {
  local db=$1
  shift
  if [ "$PG_HAS_PASSWORD" = 1 ]; then
    PGPASSWORD=$PG_PASSWORD PGCONNECT_TIMEOUT=5 psql -X -w -q -At -v ON_ERROR_STOP=1 -d "$(pg_url "$db")" "$@"
  else
    PGCONNECT_TIMEOUT=5 psql -X -w -q -At -v ON_ERROR_STOP=1 -d "$(pg_url "$db")" "$@"
  fi
}

# Find the local cluster configured for PG_PORT -> PG_VER PG_CLUSTER PG_STATUS.
pg_local_cluster() {
  local ver name port status rest
  PG_VER="" PG_CLUSTER="" PG_STATUS=""
  command -v pg_lsclusters >/dev/null 2>&1 || return 1
  while read -r ver name port status rest; do
    if [ "$port" = "$PG_PORT" ]; then
      PG_VER=$ver PG_CLUSTER=$name PG_STATUS=$status
      return 0
    fi
  done < <(pg_lsclusters -h 2>/dev/null)
  return 1
}

# pg_alive: 0 = PostgreSQL answers (maybe still starting), 1 = nothing listens, 2 = something else.
pg_alive() {
  if command -v pg_isready >/dev/null 2>&1; then
    local rc=0
    pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 2 || rc=$?
    case $rc in 0 | 1) return 0 ;; esac
    port_open "$PG_HOST" "$PG_PORT" && return 2
    return 1
  fi
  port_open "$PG_HOST" "$PG_PORT" && return 0
  return 1
}

# Bounded wait until the server accepts connections (not just the TCP port).
pg_wait_ready() {
  local deadline=$((SECONDS + INFRA_WAIT)) fix=$1
  while :; do
    if command -v pg_isready >/dev/null 2>&1; then
      pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 1 && return 0
    else
      port_open "$PG_HOST" "$PG_PORT" && return 0
    fi
    [ "$SECONDS" -lt "$deadline" ] || die "PostgreSQL at $PG_HOST:$PG_PORT is not ready after ${INFRA_WAIT}s. $fix"
    sleep 0.3
  done
}

# Start the local cluster for PG_PORT (create one if the machine has none), then wait for it.
pg_start_local() {
  if ! pg_local_cluster; then
    command -v pg_lsclusters >/dev/null 2>&1 || die "pg_lsclusters not found: is the Debian 'postgresql' package installed?"
    if [ -n "$(pg_lsclusters -h 2>/dev/null)" ]; then
      die "no local PostgreSQL cluster is configured for port $PG_PORT (see pg_lsclusters); fix the port in DATABASE_URL"
    fi
    local ver
    ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
    [ -n "$ver" ] || die "no PostgreSQL server binaries under /usr/lib/postgresql"
    log "creating PostgreSQL $ver cluster 'main' on port $PG_PORT"
    as_root pg_createcluster -p "$PG_PORT" "$ver" main >>"$INFRA_LOG" 2>&1 || die "pg_createcluster failed (see $INFRA_LOG)"
    PG_FRESH=1
    pg_local_cluster || die "created a cluster but pg_lsclusters does not show it on port $PG_PORT"
  fi
  case $PG_STATUS in
  online*) ;;
  *)
    log "starting PostgreSQL $PG_VER/$PG_CLUSTER on port $PG_PORT"
    as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VER" "$PG_CLUSTER" start ||
      die "could not start PostgreSQL $PG_VER/$PG_CLUSTER (see /var/log/postgresql/postgresql-$PG_VER-$PG_CLUSTER.log)"
    ;;
  esac
  pg_wait_ready "See /var/log/postgresql/postgresql-$PG_VER-$PG_CLUSTER.log; start it with: pg_ctlcluster --skip-systemctl-redirect $PG_VER $PG_CLUSTER start"
}

# After apt touched the server package: make sure the local cluster runs again.
pg_ensure_running() {
  pg_local_cluster || return 0
  case $PG_STATUS in online*) ;; *) log "PostgreSQL $PG_VER/$PG_CLUSTER is down after the package change; starting it" ;; esac
  pg_start_local
}

# Fresh Debian installs use scram for TCP; the stack expects trust for local TCP like the dev machines.
pg_trust_local() {
  pg_local_cluster || die "cannot find the local PostgreSQL cluster on port $PG_PORT"
  local hba=/etc/postgresql/$PG_VER/$PG_CLUSTER/pg_hba.conf
  log "fresh PostgreSQL install: setting trust for host 127.0.0.1/32 and ::1/128 in $hba"
  as_root sed -i -E \
    's#^(host[[:space:]]+all[[:space:]]+all[[:space:]]+(127\.0\.0\.1/32|::1/128)[[:space:]]+)[^[:space:]]+#\1trust#' "$hba"
  as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VER" "$PG_CLUSTER" reload >/dev/null
  local deadline=$((SECONDS + INFRA_WAIT))
  until pg_psql postgres -c 'select 1' >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.3
  done
}

# The databases the project uses -> PG_DBS: the one in DATABASE_URL plus GATEHOUSE_EXTRA_DBS
# (comma or space separated; default gatehouse_test; set it empty for none).
pg_project_dbs() {
  local d seen=" " list
  PG_DBS=()
  list="$PG_DB ${GATEHOUSE_EXTRA_DBS-gatehouse_test}"
  for d in ${list//,/ }; do
    [[ $d =~ ^[A-Za-z_][A-Za-z0-9_-]*$ ]] || die "bad database name '$d' (DATABASE_URL / GATEHOUSE_EXTRA_DBS)"
    case $seen in *" $d "*) continue ;; esac
    seen="$seen$d "
    PG_DBS+=("$d")
  done
}

pg_vector_available() {
  pg_psql postgres -c "select default_version from pg_available_extensions where name='vector'" 2>/dev/null || true
}

ensure_postgres() {
  local url=${DATABASE_URL:-$PG_DEFAULT_URL} shown err missing_before=$MISSING alive=0
  pg_parse "$url"
  shown=$(mask_url "$url")
  pg_project_dbs

  # 1. a server answers
  pg_alive || alive=$?
  if [ "$alive" = 2 ]; then
    if [ "$CHECK_ONLY" = 1 ]; then missing "something listens at $PG_HOST:$PG_PORT but it is not PostgreSQL"; return; fi
    die "something listens at $PG_HOST:$PG_PORT but it does not answer like PostgreSQL. Fix DATABASE_URL."
  fi
  if [ "$alive" = 1 ]; then
    if ! is_local_host "$PG_HOST"; then
      if [ "$CHECK_ONLY" = 1 ]; then missing "PostgreSQL at $shown does not answer"; return; fi
      die "PostgreSQL at $shown does not answer. Start it there or point DATABASE_URL at a running server."
    fi
    if [ "$CHECK_ONLY" = 1 ]; then
      pkg_installed postgresql || missing "package postgresql"
      missing "PostgreSQL is not running at $shown"
      return
    fi
    take_lock
    if ! pg_alive; then
      if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
        apt_install postgresql
        PG_FRESH=1
      fi
      pg_alive || pg_start_local
    fi
  fi

  # 2. a client, a ready server, a login
  if ! command -v psql >/dev/null 2>&1; then
    if [ "$CHECK_ONLY" = 1 ]; then missing "psql (package postgresql-client)"; return; fi
    apt_install postgresql-client
  fi
  pg_wait_ready "Check the server log."
  if ! err=$(pg_psql postgres -c 'select 1' 2>&1 >/dev/null); then
    if [ "$PG_FRESH" = 1 ] && is_local_host "$PG_HOST" && pg_trust_local; then
      :
    else
      die "cannot log in to PostgreSQL at $shown: ${err:-unknown error}. Local machines use trust auth for 127.0.0.1 (pg_hba.conf)."
    fi
  fi

  # 3. project databases
  local dbs=("${PG_DBS[@]}") d existing in_list
  in_list=$(printf "'%s'," "${dbs[@]}")
  existing=$(pg_psql postgres -c "select datname from pg_database where datname in (${in_list%,})") ||
    die "could not list databases on $shown"
  existing=" ${existing//$'\n'/ } "
  local present=()
  for d in "${dbs[@]}"; do
    case $existing in *" $d "*) present+=("$d"); continue ;; esac
    if [ "$CHECK_ONLY" = 1 ]; then missing "database $d"; continue; fi
    take_lock
    if [ -z "$(pg_psql postgres -c "select 1 from pg_database where datname='$d'")" ]; then
      pg_psql postgres -c "create database \"$d\"" || die "could not create database $d"
      log "created database $d"
    fi
    present+=("$d")
  done

  # 4. pgvector in every project database
  local need=() v
  for d in "${present[@]}"; do
    v=$(pg_psql "$d" -c "select extversion from pg_extension where extname='vector'") ||
      die "could not query database $d on $shown"
    [ -n "$v" ] || need+=("$d")
  done
  if [ "${#need[@]}" -gt 0 ] || [ "${#present[@]}" -lt "${#dbs[@]}" ]; then
    if [ -z "$(pg_vector_available)" ]; then
      if [ "$CHECK_ONLY" = 1 ]; then
        missing "pgvector (extension 'vector' is not available on the server)"
        need=()
      elif is_local_host "$PG_HOST"; then
        pgvector_build
      else
        die "pgvector is not installed on the PostgreSQL server at $shown. Install it there (or use the pgvector/pgvector image)."
      fi
    fi
    for d in "${need[@]}"; do
      if [ "$CHECK_ONLY" = 1 ]; then missing "extension vector in database $d"; continue; fi
      take_lock
      pg_psql "$d" -c "create extension if not exists vector" || die "could not create extension vector in database $d"
      log "created extension vector in database $d"
    done
  fi
  v=$(pg_psql "${present[0]:-postgres}" -c "select extversion from pg_extension where extname='vector'" 2>/dev/null || true)
  local state=ok
  [ "$MISSING" -gt "$missing_before" ] && state=incomplete
  log "postgres  $shown  $state (databases: ${present[*]:-none}; vector ${v:-missing})"
}
