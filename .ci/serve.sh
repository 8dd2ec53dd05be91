#!/usr/bin/env bash
# Builds (installing missing tools) and serves memplan on http://127.0.0.1:3000.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/.ci/setup.sh"
cd "$ROOT"
exec cargo leptos serve --release "$@"
