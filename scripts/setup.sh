#!/usr/bin/env bash
# Installs the system packages HiGHS's build needs (cmake; libclang for bindgen), only where
# they are missing. Safe to run repeatedly. Needs root (or sudo) on Debian/Ubuntu.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
if ! ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so'; then
  need+=(libclang1-14)
fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
