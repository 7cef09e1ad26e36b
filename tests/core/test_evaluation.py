"""``memwell eval``: BEIR loading, metrics, and an end-to-end run on a tiny dataset."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.contract.errors import ConfigError
from memwell.contract.models import MemorySearchResult
from memwell.evaluation.beir import (
    Dataset,
    doc_filename,
    evaluate,
    floor_dropped,
    load_dataset,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
)


def write_beir(root: Path) -> Path:
    root.mkdir()
    docs = [
        {"_id": "d1", "title": "Volcanoes", "text": "Magma rises through the crust."},
        {"_id": "d2", "title": "Glaciers", "text": "Ice sheets carve valleys slowly."},
        {"_id": "d/3", "title": "Deserts", "text": "Dunes move with the wind."},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    queries = [
        {"_id": "q1", "text": "magma crust"},
        {"_id": "q2", "text": "ice valleys"},
        {"_id": "q3", "text": "dunes wind"},
        {"_id": "q4", "text": "unjudged query"},
    ]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td/3\t1\nq3\td1\t0\n"
    )
    return root


def test_metrics() -> None:
    rel = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "b"], rel) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "a"], {"a": 1}) == pytest.approx(1 / math.log2(3))
    assert recall_at_k(["a", "x"], rel, 10) == 0.5
    assert mrr_at_k(["x", "y", "b"], rel) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"], rel) == 0.0


def test_floor_dropped_is_the_share_of_unjudged_documents_left_out() -> None:
    ranked = ["rel", "x", "y", "z"]
    # depth 3: x and y are unrelated; the floor kept rel and x
    assert floor_dropped(ranked, {"rel", "x"}, {"rel"}, 3) == 0.5
    assert floor_dropped(ranked, {"rel"}, {"rel"}, 3) == 1.0
    assert floor_dropped(ranked, set(ranked), {"rel"}, 4) == 0.0
    assert floor_dropped(["rel"], {"rel"}, {"rel"}, 3) == 1.0  # nothing unrelated to drop


def test_floor_kept_found_counts_only_answers_the_ranking_found() -> None:
    # q1: answer first, floor keeps it; q2: answer third, floor drops it; q3: answer ranked
    # beyond the floor's depth, so only the ranking lost it
    ranking = {"q1": ["a", "x", "y"], "q2": ["x", "y", "b"], "q3": ["x", "y", "z", "c"]}
    kept = {"q1": ["a"], "q2": ["x"], "q3": ["x", "y"]}
    data = Dataset(
        corpus={d: ("", "") for d in "abcxyz"},
        queries={q: q for q in ranking},
        qrels={"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}},
    )

    def hits(docs: list[str]) -> list[MemorySearchResult]:
        return [MemorySearchResult(path=f"{d}.md", start_line=1, end_line=1, score=0.5,
                                   snippet=d, source="memory") for d in docs]  # fmt: skip

    paths = {f"{d}.md": d for d in "abcxyz"}
    report = evaluate(
        data, lambda q: hits(ranking[q]), paths, floored=lambda q: hits(kept[q]), floor_depth=3
    )
    assert report["floor_kept"] == pytest.approx(1 / 3)
    assert report["floor_kept_found"] == pytest.approx(1 / 2), "q3 is the ranking's miss"
    assert "floor_kept_found" not in evaluate(data, lambda q: hits(ranking[q]), paths)


def test_load_dataset_skips_header_and_zero_grades(tmp_path: Path) -> None:
    ds = load_dataset(write_beir(tmp_path / "beir"), "test")
    assert set(ds.qrels) == {"q1", "q2", "q3"}
    assert ds.qrels["q3"] == {"d/3": 1}
    assert "/" not in doc_filename("d/3") and doc_filename("d1") == "d1.md"
    with pytest.raises(ConfigError, match="split 'train'"):
        load_dataset(tmp_path / "beir", "train")


def test_eval_command_keyword_mode(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "beir")
    args = ["--provider", "none", "eval", "--dataset", str(data), "--mode", "keyword"]
    args += ["--workdir", str(tmp_path / "work"), "--json"]
    result = CliRunner().invoke(cli, args, obj=None)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["mode"] == "keyword" and report["queries"] == 3
    assert report["ndcg_at_10"] == pytest.approx(1.0)
    assert report["mrr_at_10"] == pytest.approx(1.0)
    assert report["floor_kept"] == pytest.approx(1.0), "every relevant doc survives the floor"
    assert report["floor_kept_found"] == pytest.approx(1.0)
    assert 0.0 <= report["floor_dropped"] <= 1.0
    assert report["rerank"] is None
    assert (tmp_path / "work" / "memory" / "d1.md").read_text().startswith("# Volcanoes")
