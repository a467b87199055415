# shellcheck shell=bash
# pgvector is not packaged for Debian 12: build it once from the Debian 13 (trixie) source
# package (0.8.0) against the local server's headers and `make install` it. Sourced by
# ensure-infra.sh; called from ensure_postgres with the lock held.

PGVECTOR_SRC_LIST=/etc/apt/sources.list.d/gatehouse-trixie-src.list

# The Debian mirror this machine already uses (first source for its own release), so the
# extra deb-src line points at the same place. GATEHOUSE_DEBIAN_MIRROR overrides it.
debian_mirror() {
  if [ -n "${GATEHOUSE_DEBIAN_MIRROR:-}" ]; then
    printf '%s\n' "$GATEHOUSE_DEBIAN_MIRROR"
    return
  fi
  local codename f files=()
  codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-bookworm}")
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ "${#files[@]}" -gt 0 ] || return 0
  awk -v rel="$codename" '
    function flush() { if (uri != "" && hit) print uri; uri = ""; hit = 0 }
    FNR == 1 { flush() }
    /^[[:space:]]*deb[[:space:]]/ {
      line = $0; gsub(/\[[^]]*\]/, "", line); n = split(line, f, /[[:space:]]+/)
      for (i = 1; i <= n; i++) if (f[i] ~ /:\/\//) { if (f[i+1] == rel) print f[i]; break }
      next
    }
    /^URIs:/ { uri = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == rel) hit = 1 }
    /^[[:space:]]*$/ { flush() }
    END { flush() }
  ' "${files[@]}" 2>/dev/null | head -n 1 || true
}

pgvector_build() {
  take_lock
  [ -n "$(pg_vector_available)" ] && return 0 # a concurrent run finished it meanwhile
  pg_local_cluster || die "cannot find the local PostgreSQL cluster on port $PG_PORT to build pgvector for"
  local ver=$PG_VER t0=$SECONDS mirror tmp src
  local pgc=/usr/lib/postgresql/$ver/bin/pg_config
  log "pgvector missing: building it for PostgreSQL $ver from the Debian trixie source package (first run only)"

  if [ ! -f "$PGVECTOR_SRC_LIST" ]; then
    mirror=$(debian_mirror) || true
    [ -n "$mirror" ] || die "cannot find this machine's Debian mirror in /etc/apt; set GATEHOUSE_DEBIAN_MIRROR"
    printf 'deb-src %s trixie main\n' "$mirror" | as_root tee "$PGVECTOR_SRC_LIST" >/dev/null
    APT_UPDATED=0 # the new source index must be fetched
  fi
  apt_update
  apt_install "postgresql-server-dev-$ver" build-essential dpkg-dev
  [ -x "$pgc" ] || die "$pgc missing after installing postgresql-server-dev-$ver"
  # Installing the dev package can upgrade the server package, which stops the cluster.
  pg_ensure_running

  tmp=$(mktemp -d /tmp/gatehouse-pgvector.XXXXXX)
  log "fetching and building pgvector source (log: $INFRA_LOG)"
  (cd "$tmp" && apt-get source pgvector) >>"$INFRA_LOG" 2>&1 ||
    die "apt-get source pgvector failed (see $INFRA_LOG)"
  src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)
  [ -n "$src" ] || die "no pgvector source directory after apt-get source (see $INFRA_LOG)"
  # OPTFLAGS="": no -march=native, so the library also runs on other CPUs (pgvector picks
  # SIMD code paths at run time).
  make -C "$src" PG_CONFIG="$pgc" OPTFLAGS="" -j"$(nproc)" >>"$INFRA_LOG" 2>&1 ||
    die "building pgvector failed (see $INFRA_LOG)"
  as_root make -C "$src" PG_CONFIG="$pgc" OPTFLAGS="" install >>"$INFRA_LOG" 2>&1 ||
    die "installing pgvector failed (see $INFRA_LOG)"
  rm -rf "$tmp"

  pg_ensure_running
  [ -n "$(pg_vector_available)" ] || die "pgvector was installed but the server does not list it (see $INFRA_LOG)"
  log "pgvector $(pg_vector_available) installed in $((SECONDS - t0)) s"
}
