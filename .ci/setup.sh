#!/usr/bin/env bash
# Installs what building, serving and testing memplan need, skipping whatever
# is already there. Sourced by .ci/serve.sh and .ci/test.sh (it exports PATH).
# Works on a fresh Debian machine with only the Rust toolchain (rustup) installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARGO_LEPTOS_VERSION="0.3.10"   # 0.3.11 needs a newer rustc than 1.95
# The wasm-bindgen CLI must equal the crate pinned with `=` in Cargo.toml.
WASM_BINDGEN_VERSION="$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' "$ROOT/Cargo.toml")"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

export PATH="$ROOT/end2end/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
  say "installing cargo-leptos $CARGO_LEPTOS_VERSION (takes ~17 min on 2 cores)"
  cargo install cargo-leptos --locked --version "$CARGO_LEPTOS_VERSION"
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  # Without --locked: its lock file names a crate version the registry lacks.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

if ! command -v chromium >/dev/null 2>&1; then
  say "installing Debian's chromium (Playwright's own browser download does not work here)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# Node tools: Playwright (driving Debian's chromium) and binaryen 132's wasm-opt
# (Debian's binaryen 108 produces WASM that dies at hydration).
if [ ! -x "$ROOT/end2end/node_modules/.bin/wasm-opt" ] || [ ! -d "$ROOT/end2end/node_modules/@playwright/test" ] \
   || [ "$ROOT/end2end/package-lock.json" -nt "$ROOT/end2end/node_modules/.package-lock.json" ]; then
  say "installing end2end node modules (playwright, binaryen)"
  (cd "$ROOT/end2end" && npm ci --no-audit --no-fund --loglevel=error)
fi

case "$(command -v wasm-opt)" in
  "$ROOT/end2end/node_modules/.bin/wasm-opt") ;;
  *) say "wasm-opt on PATH is not binaryen 132 from end2end/node_modules"; exit 1 ;;
esac
