# Shared set-up for scripts/start and scripts/test: pnpm, dependencies, infrastructure, migrations.
# Idempotent and quick when everything is already in place. Sourced, not executed.

GATEHOUSE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

say() { printf '[setup] %s\n' "$*" >&2; }

# pnpm is not on a fresh machine; corepack's download fails its signature check here, so npm it is.
ensure_pnpm() {
  if command -v pnpm >/dev/null 2>&1 && pnpm --version 2>/dev/null | grep -q '^10\.'; then return; fi
  say "installing pnpm 10 with npm"
  npm install -g pnpm@10 >/dev/null 2>&1 || {
    say "global npm install failed; falling back to npx pnpm@10"
    pnpm() { npx -y pnpm@10 "$@"; }
  }
}

install_deps() {
  # --frozen-lockfile: a fresh clone installs exactly what was tested.
  (cd "$GATEHOUSE_ROOT" && pnpm install --frozen-lockfile --reporter=silent) || {
    say "pnpm install failed"; return 1; }
}

gatehouse_setup() {
  ensure_pnpm
  install_deps
  bash "$GATEHOUSE_ROOT/infra/bringup/ensure-infra.sh"
  # The one migration path (docs/migrations.md): every folder of infra/migrations into its schema
  # of DATABASE_URL, before anything starts; the workers only check their schema is current.
  (cd "$GATEHOUSE_ROOT" && node --import tsx scripts/src/migrate.ts)
  build_web_ui
}

# The chat face serves services/web-ui/dist: rebuilt (vite build, then .br/.gz of the assets) when
# a hash of its sources differs from .state/web-ui.stamp or dist is missing; quick otherwise.
build_web_ui() {
  (cd "$GATEHOUSE_ROOT" && node --import tsx scripts/src/build-web-ui.ts) || {
    say "web UI build failed (above)"; return 1; }
}
