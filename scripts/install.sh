#!/usr/bin/env bash
# Install memwell, every first-party plugin and the test tools into a virtual environment.
# Usage: bash scripts/install.sh [VENV_DIR]   (default .venv; created if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip >/dev/null

# CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
"${PIP[@]}" install "torch==2.13.0"

packages=(-e ".[test]")
for project in plugins/*/pyproject.toml plugins/providers/*/pyproject.toml examples/*/pyproject.toml; do
  [ -f "$project" ] || continue
  dir=$(dirname "$project")
  if grep -q '^test = ' "$project"; then
    packages+=(-e "$dir[test]")
  else
    packages+=(-e "$dir")
  fi
done
"${PIP[@]}" install "${packages[@]}" ruff mypy
echo "installed into $VENV: $("$VENV/bin/memwell" --version)"
