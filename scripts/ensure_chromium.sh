#!/usr/bin/env bash
# Make sure a Chromium for the browser tests is installed (Debian's package; no browser download).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
else
  echo "Chromium is missing and cannot be installed here (needs root and apt-get)." >&2
  echo "Install it (e.g. 'sudo apt-get install chromium') to run the browser tests." >&2
  [ -n "${CI:-}" ] && exit 1
fi
exit 0
