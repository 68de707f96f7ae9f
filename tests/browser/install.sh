#!/usr/bin/env bash
# tests/browser/install.sh BUILD_DIR: the browser test's driver, npm's playwright-core at
# the version pinned by package.json and package-lock.json of this folder, installed with
# `npm ci` under BUILD_DIR/browser-node (never into the source tree, never a browser:
# PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1, --ignore-scripts; the browser is Debian's
# /usr/bin/chromium). Nothing is done when the installed lock file equals this folder's.
# Needs node and npm (scripts/test.sh installs Debian's nodejs and npm when node is missing)
# and the npm registry. Exit 0 when BUILD_DIR/browser-node/node_modules/playwright-core is
# the pinned version.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: install.sh BUILD_DIR}
mkdir -p "$build"
build=$(cd "$build" && pwd)     # absolute: node resolves a bare "build/…" as a package name
dir=$build/browser-node
command -v node >/dev/null || { echo "install.sh: no node (apt-get install nodejs npm)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: no npm (apt-get install npm)" >&2; exit 1; }
want=$(sed -n 's/.*"playwright-core": *"\([0-9.]*\)".*/\1/p' "$here/package.json" | head -n 1)
have=$(node -p 'try { require(process.argv[1]).version } catch (e) { "" }' \
        "$dir/node_modules/playwright-core/package.json" 2>/dev/null || true)
if [[ -n $want && $have == "$want" ]] && cmp -s "$here/package-lock.json" "$dir/package-lock.json"; then
        exit 0
fi
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund \
        --loglevel=error >&2
have=$(node -p 'require(process.argv[1]).version' "$dir/node_modules/playwright-core/package.json")
[[ $have == "$want" ]] || { echo "install.sh: playwright-core $have installed, $want pinned" >&2; exit 1; }
echo "playwright-core $have in $dir (node $(node --version))"
