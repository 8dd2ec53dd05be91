#!/usr/bin/env bash
# Builds (installing missing tools) and serves memplan on http://127.0.0.1:3000.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/.ci/setup.sh"
cd "$ROOT"
# `--split`: functions marked `#[lazy]` go to WASM chunks of their own, fetched
# when first called (docs/BENCHMARKS.md, "WASM bundle").
exec cargo leptos serve --release --split "$@"
