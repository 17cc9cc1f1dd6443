#!/usr/bin/env bash
# Install Debian's Chromium for the headless browser tests. Playwright (a pip package) drives it
# through its executable path, so no browser is downloaded.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
else
  echo "chromium not found and cannot apt-get install it (not root or no apt):" \
       "browser tests will be skipped outside CI and fail in CI" >&2
fi
