#!/usr/bin/env bash
# Runs every test: format, lints, unit/integration tests, the wasm32 builds,
# the page WASM against its size budget, and the Playwright end-to-end tests
# (hydrated and JavaScript-off) against the release build served on a free
# local port.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/.ci/setup.sh"
cd "$ROOT"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (native, server + app/ssr)"
cargo clippy --workspace --all-targets -- -D warnings
step "clippy (wasm32, app/hydrate)"
cargo clippy -p app --lib --features hydrate --target wasm32-unknown-unknown -- -D warnings

step "cost-model docs (every intra-doc link resolves, private items included)"
RUSTDOCFLAGS="-D warnings" cargo doc -p cost-model --no-deps --document-private-items

step "calibration data: the committed CSV is what its raw measurements give"
python3 calibration/to_csv.py calibration/h200-2026-11-30 | diff -u calibration/h200-2026-11-30.csv -

step "cargo test --workspace"
cargo test --workspace

step "wasm32 builds: cost-model, app/hydrate"
cargo build -p cost-model --target wasm32-unknown-unknown
cargo build -p app --lib --features hydrate --target wasm32-unknown-unknown

step "cargo leptos build --release --split"
# `--split`: the `#[lazy]` functions become WASM chunks fetched on first use.
cargo leptos build --release --split

step "page WASM within its budget (DESIGN.md §4: bundle ≤ 400 KiB gzip)"
# The main module the planner loads; the lazy chunks load on other routes.
WASM_GZ=$(gzip -9 -c target/site/pkg/memplan.wasm | wc -c)
echo "target/site/pkg/memplan.wasm: $WASM_GZ bytes gzip -9 (budget 409600)"
[ "$WASM_GZ" -le 409600 ] || { echo "the page's WASM is over its 400 KiB budget"; exit 1; }

step "end-to-end (Playwright in Debian chromium)"
PORT="${MEMPLAN_TEST_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
LOG="$(mktemp)"
DB_DIR="$(mktemp -d)"   # a fresh SQLite plan store for the journeys
LEPTOS_SITE_ROOT=target/site ./target/release/memplan serve --addr "127.0.0.1:$PORT" \
  --database "sqlite:$DB_DIR/plans.db" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break
  kill -0 $SERVER 2>/dev/null || { cat "$LOG"; echo "server exited"; exit 1; }
  sleep 0.1
done
(cd end2end && BASE_URL="http://127.0.0.1:$PORT" npx playwright test)
kill -TERM $SERVER
wait $SERVER || { cat "$LOG"; echo "server did not stop cleanly on SIGTERM"; exit 1; }
trap - EXIT
grep -q "memplan stopped" "$LOG" || { cat "$LOG"; echo "no graceful shutdown logged"; exit 1; }
echo "all tests passed"
