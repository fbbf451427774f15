#!/usr/bin/env bash
# Sets up a fresh machine: the system packages the tests and the example need, and a
# virtual environment (.venv) holding glowmlir with its pinned dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
[ -f /usr/include/png.h ] || missing+=(libpng-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
