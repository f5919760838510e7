#!/usr/bin/env bash
# Debian's Chromium for the browser tests: Playwright drives it through executable_path and never
# downloads a browser (there is no browser download here). Installed only where it is missing.
set -euo pipefail
if [ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "== [$(date -u +%T)] chromium: installing Debian's package for the browser tests =="
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
# The package lists may be stale or absent on a fresh machine; the install is what must work.
$SUDO apt-get update -qq || echo "apt-get update failed; trying the install with the lists present"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "== chromium $(/usr/lib/chromium/chromium --version 2>/dev/null || chromium --version) installed =="
