"""``memwell eval`` on the LoCoMo layout: loading, writing, metrics, an end-to-end keyword run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.contract.errors import ConfigError
from memwell.contract.models import MemorySearchResult
from memwell.evaluation.conversation import (
    Question,
    WrittenConversation,
    floor_scores,
    load_conversations,
    metric_names,
    score_question,
    session_date,
    session_recall,
    summarize,
    turn_recall,
    write_conversation,
)

TURNS = [
    ("c1", 1, "1:56 pm on 8 May, 2023", "D1:1", "Ann", "I adopted a greyhound named Biscuit."),
    ("c1", 1, "1:56 pm on 8 May, 2023", "D1:2", "Bob", "Lovely! I am repainting my kitchen."),
    ("c1", 2, "10:04 am on 19 June, 2023", "D2:1", "Ann", "The marathon in Lisbon went well."),
    ("c1", 2, "10:04 am on 19 June, 2023", "D2:2", "Bob", "I started learning the cello."),
    ("c1", 3, "7:30 pm on 19 June, 2023", "D3:1", "Ann", "Dinner was a lentil curry."),
    ("c2", 1, "9:00 am on 1 March, 2022", "D1:1", "Cy", "My volcano photos came out sharp."),
]
QUESTIONS = [
    # words only in session 1, evidence in session 1: found at rank 1
    {"qid": "q1", "conv_id": "c1", "question": "greyhound Biscuit", "category": 4,
     "evidence": ["D1:1"], "evidence_sessions": [1]},
    # words only in session 1, evidence in session 2: never found by keyword search
    {"qid": "q2", "conv_id": "c1", "question": "kitchen repainting", "category": 2,
     "evidence": ["D2:2"], "evidence_sessions": [2]},
    # no evidence: counts as 1 everywhere
    {"qid": "q3", "conv_id": "c1", "question": "anything", "category": 5,
     "evidence": [], "evidence_sessions": []},
    {"qid": "q4", "conv_id": "c2", "question": "volcano photos", "category": 4,
     "evidence": ["D1:1"], "evidence_sessions": [1]},
]  # fmt: skip


def write_locomo(root: Path) -> Path:
    root.mkdir()
    with (root / "turns.jsonl").open("w") as fh:
        for conv, session, when, dia, speaker, text in TURNS:
            record = {"conv_id": conv, "session": session, "session_date_time": when,
                      "dia_id": dia, "speaker": speaker, "text": text}  # fmt: skip
            if dia == "D2:1":
                record["blip_caption"] = "a photo of runners\non a bridge"
            fh.write(json.dumps(record) + "\n")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return root


def hit(path: str, start: int, end: int) -> MemorySearchResult:
    return MemorySearchResult(
        path=path, start_line=start, end_line=end, score=0.5, snippet="", source="memory"
    )


def test_load_and_write(tmp_path: Path) -> None:
    conversations = load_conversations(write_locomo(tmp_path / "data"))
    assert list(conversations) == ["c1", "c2"]
    c1 = conversations["c1"]
    assert [q.qid for q in c1.questions] == ["q1", "q2", "q3"]
    written = write_conversation(c1, tmp_path / "ws" / "memory")
    assert written.session_paths == {
        1: "memory/2023-05-08-session-1.md",
        2: "memory/2023-06-19-session-2.md",
        3: "memory/2023-06-19-session-3.md",
    }
    text = (tmp_path / "ws" / "memory" / "2023-06-19-session-2.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "# Session 2: 10:04 am on 19 June, 2023"
    path, line = written.turn_lines["D2:1"]
    assert path == "memory/2023-06-19-session-2.md"
    # one line per turn, the caption folded onto it
    assert lines[line - 1] == (
        "Ann: The marathon in Lisbon went well. [shares a photo: a photo of runners on a bridge]"
    )
    assert lines[written.turn_lines["D2:2"][1] - 1] == "Bob: I started learning the cello."


def test_per_day_layout_names_files_by_day(tmp_path: Path) -> None:
    c1 = load_conversations(write_locomo(tmp_path / "data"))["c1"]
    written = write_conversation(c1, tmp_path / "ws" / "memory", "per-day")
    # a second session on 19 June gets the -2 suffix; the text of each file is unchanged
    assert written.session_paths == {
        1: "memory/2023-05-08.md",
        2: "memory/2023-06-19.md",
        3: "memory/2023-06-19-2.md",
    }
    assert written.turn_lines["D3:1"] == ("memory/2023-06-19-2.md", 3)
    per_session = write_conversation(c1, tmp_path / "other" / "memory", "per-session")
    for number, path in written.session_paths.items():
        same = (tmp_path / "other" / per_session.session_paths[number]).read_text()
        assert (tmp_path / "ws" / path).read_text() == same
    with pytest.raises(ConfigError, match="unknown layout"):
        write_conversation(c1, tmp_path / "x", "per-week")


def test_session_date() -> None:
    assert session_date("1:56 pm on 8 May, 2023") is not None
    assert f"{session_date('12:09 am on 13 September, 2023'):%Y-%m-%d %H:%M}" == (
        "2023-09-13 00:09"
    )
    assert session_date("someday") is None


def test_metrics_on_known_rankings() -> None:
    results = [hit("a.md", 1, 3), hit("a.md", 4, 6), hit("b.md", 1, 9), hit("c.md", 2, 2)]
    # distinct files: a, b, c
    assert session_recall(results, {"b.md"}, 1) == 0.0
    assert session_recall(results, {"b.md"}, 2) == 1.0
    assert session_recall(results, {"b.md", "z.md"}, 3) == 0.5
    assert session_recall(results, set(), 1) == 1.0
    # turn lines must fall inside one of the first k hits' line ranges
    assert turn_recall(results, [("a.md", 5)], 1) == 0.0
    assert turn_recall(results, [("a.md", 5)], 2) == 1.0
    assert turn_recall(results, [("c.md", 2), ("c.md", 3)], 4) == 0.5
    assert turn_recall(results, [], 5) == 1.0


def test_score_question_derives_sessions_from_turn_ids() -> None:
    written = WrittenConversation({1: "s1.md", 2: "s2.md"}, {"D2:4": ("s2.md", 6)})
    question = Question("q", "c", "x", 1, ("D2:4",), ())
    scores = score_question(question, written, [hit("s1.md", 1, 9), hit("s2.md", 5, 7)])
    assert scores["session_recall_at_1"] == 0.0
    assert scores["session_recall_at_3"] == 1.0
    assert scores["turn_recall_at_5"] == 1.0


def test_floor_dropped_counts_other_sessions_left_out_by_the_floor() -> None:
    q = Question("q", "c", "x", 4, ("D1:1",), (1,))
    written = WrittenConversation({1: "a.md", 2: "b.md", 3: "c.md"}, {"D1:1": ("a.md", 2)})
    top = [hit("a.md", 1, 3), hit("b.md", 1, 3), hit("c.md", 1, 3)]
    # the floor kept the answer and b.md: one of the two unrelated files dropped
    scores = floor_scores(q, written, top[:2], top)
    assert scores["floor_kept"] == 1.0 and scores["floor_dropped"] == 0.5
    assert floor_scores(q, written, [], top)["floor_dropped"] == 1.0
    assert floor_scores(q, written, top, top)["floor_dropped"] == 0.0


def test_floor_scores() -> None:
    written = WrittenConversation({1: "s1.md", 2: "s2.md"}, {})
    question = Question("q", "c", "x", 4, (), (2,))
    kept = floor_scores(question, written, [hit("s1.md", 1, 2), hit("s2.md", 1, 2)])
    assert kept == {"floor_kept": 1.0, "floor_dropped": 1.0, "floor_empty": 0.0}
    empty = {"floor_kept": 0.0, "floor_dropped": 1.0, "floor_empty": 1.0}
    assert floor_scores(question, written, []) == empty
    no_evidence = Question("q", "c", "x", 5, (), ())
    assert floor_scores(no_evidence, written, [])["floor_kept"] == 1.0


def test_summary_groups_categories() -> None:
    q = [Question(str(i), "c", "x", cat, (), ()) for i, cat in enumerate([1, 5, 5])]
    rows = [{"session_recall_at_1": v} for v in (1.0, 0.0, 0.5)]
    full = [{**dict.fromkeys(metric_names(), 0.0), **row} for row in rows]
    summary = summarize(list(zip(q, full, strict=True)))
    assert summary["overall"]["session_recall_at_1"] == pytest.approx(0.5)
    assert summary["categories_1_4"]["session_recall_at_1"] == 1.0
    assert summary["adversarial"]["session_recall_at_1"] == pytest.approx(0.25)
    assert summary["by_category"]["adversarial"]["questions"] == 2


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    root = write_locomo(tmp_path / "data")
    with (root / "questions.jsonl").open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(ConfigError, match=r"questions.jsonl:5: not JSON"):
        load_conversations(root)


def test_eval_command_on_conversations_keyword_mode(tmp_path: Path) -> None:
    data = write_locomo(tmp_path / "data")
    args = ["--provider", "none", "eval", "--dataset", str(data), "--mode", "keyword"]
    args += ["--workdir", str(tmp_path / "work"), "--json", "--layout", "per-session"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["conversations"] == 2 and report["layout"] == "per-session"
    overall = report["overall"]
    assert overall["questions"] == 4
    # q1 and q4 found at rank 1, q2 never, q3 has no evidence
    assert overall["session_recall_at_1"] == pytest.approx(0.75)
    assert overall["turn_recall_at_5"] == pytest.approx(0.75)
    assert report["by_category"]["temporal"]["session_recall_at_5"] == 0.0
    assert report["adversarial"]["session_recall_at_1"] == 1.0
    # under the default floor: q2's hit is the wrong session; q3 ("anything") matches nothing
    assert overall["floor_kept"] == pytest.approx(0.75)
    assert report["adversarial"]["floor_empty"] == 1.0
    assert report["categories_1_4"]["floor_empty"] == 0.0
    # each conversation is its own workspace, under the layout's own directory
    work = tmp_path / "work" / "per-session"
    assert (work / "c2" / "memory" / "2022-03-01-session-1.md").is_file()
    assert not (work / "c2" / "memory" / "2023-05-08-session-1.md").exists()


def test_eval_command_reports_both_layouts_by_default(tmp_path: Path) -> None:
    data = write_locomo(tmp_path / "data")
    args = ["--provider", "none", "eval", "--dataset", str(data), "--mode", "keyword"]
    args += ["--workdir", str(tmp_path / "work"), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert list(report["layouts"]) == ["per-session", "per-day"]
    for layout, figures in report["layouts"].items():
        assert figures["layout"] == layout
        assert figures["overall"]["session_recall_at_1"] == pytest.approx(0.75)
    assert (tmp_path / "work" / "per-day" / "c1" / "memory" / "2023-06-19-2.md").is_file()
    text = CliRunner().invoke(cli, args[:-1])
    assert text.exit_code == 0, text.output
    assert [line.split()[1] for line in text.output.splitlines() if "mode=" in line] == [
        "layout=per-session",
        "layout=per-day",
    ]


def test_eval_table_header_separates_every_column(tmp_path: Path) -> None:
    data = write_locomo(tmp_path / "data")
    args = ["--provider", "none", "eval", "--dataset", str(data), "--mode", "keyword"]
    result = CliRunner().invoke(cli, [*args, "--workdir", str(tmp_path / "work")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if "sess R@1" in line)
    labels = ["sess R@1", "sess R@3", "sess R@5", "turn R@5", "turn R@10", "floor_kept"]
    labels += ["floor_dropped", "floor_empty"]
    assert header.split() == " ".join(labels).split()  # not "turn R@10floor_kept..."
    overall = next(line for line in lines if line.strip().startswith("overall"))
    # every figure ends under the end of its column name
    ends = [header.index(name) + len(name) for name in labels]
    cells = [m.end() for m in re.finditer(r"\d\.\d{3}", overall)]
    assert cells == ends
