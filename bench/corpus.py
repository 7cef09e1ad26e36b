"""Deterministic synthetic Markdown memory corpora with planted facts, for benchmarks."""

from __future__ import annotations

import argparse
import itertools
import random
from dataclasses import dataclass
from pathlib import Path

TOPICS = [
    "deployment",
    "database",
    "billing",
    "onboarding",
    "security",
    "frontend",
    "analytics",
    "kubernetes",
    "payments",
    "search",
    "mobile",
    "support",
    "hiring",
    "budget",
    "roadmap",
    "incident",
    "migration",
    "testing",
    "design",
    "infrastructure",
]
WORDS = [
    "team",
    "decided",
    "review",
    "plan",
    "update",
    "release",
    "customer",
    "feature",
    "service",
    "latency",
    "error",
    "cache",
    "query",
    "index",
    "backup",
    "restore",
    "schedule",
    "meeting",
    "notes",
    "owner",
    "deadline",
    "risk",
    "metric",
    "alert",
    "dashboard",
    "rollout",
    "flag",
    "config",
    "secret",
    "token",
    "region",
    "cluster",
    "node",
    "queue",
    "worker",
    "job",
    "retry",
    "timeout",
    "budget",
    "cost",
    "contract",
    "vendor",
    "invoice",
    "ticket",
    "priority",
    "sprint",
    "goal",
    "outcome",
    "draft",
]
NAMES = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun"]

# The Chinese corpus (``lang="zh"``): the same shape, written without spaces between words.
ZH_TOPICS = [
    "部署",
    "数据库",
    "计费",
    "入职",
    "安全",
    "前端",
    "分析",
    "集群",
    "支付",
    "搜索",
    "移动端",
    "客服",
    "招聘",
    "预算",
    "路线图",
    "事故",
    "迁移",
    "测试",
    "设计",
    "基础设施",
]
ZH_NAMES = ["王芳", "李伟", "陈静", "张磊", "刘洋", "杨敏", "赵强", "黄丽", "周杰", "吴婷"]
ZH_CHARS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也"
    "能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实"
    "加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样"
    "与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情"
)
ZH_CODES = ["琥珀", "钴蓝", "石英", "藏红", "青绿"]


@dataclass(frozen=True)
class Fact:
    """A sentence planted in exactly one file, and a question that should retrieve it."""

    path: str
    sentence: str
    question: str


SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "re",
    "tu",
    "sa",
    "ven",
    "dor",
    "pel",
    "qui",
    "zan",
    "bri",
    "fo",
    "gat",
    "hul",
    "jin",
]


def _vocabulary(
    known: list[str], pieces: str | list[str], lengths: tuple[int, int], seed: int, size: int = 6000
) -> list[str]:
    """``known`` words first, then pseudo-words of ``lengths`` pieces; used with Zipf
    frequencies."""
    rng = random.Random(seed)
    words = list(known)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(pieces) for _ in range(rng.randint(*lengths)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


VOCABULARY = _vocabulary(WORDS, SYLLABLES, (2, 4), seed=11)
# Zipf's law (exponent 1.1) so, as in real notes, a few words are everywhere and most are rare.
_WEIGHTS = list(itertools.accumulate(1.0 / (rank**1.1) for rank in range(1, len(VOCABULARY) + 1)))
#: Two- and three-character Chinese pseudo-words over common characters.
ZH_VOCABULARY = _vocabulary([], ZH_CHARS, (2, 3), seed=13)


def _paragraph(rng: random.Random, topic: str, words: int) -> str:
    body = " ".join(rng.choices(VOCABULARY, cum_weights=_WEIGHTS, k=words))
    return f"{rng.choice(NAMES)} noted on {topic}: {body}."


def _zh_paragraph(rng: random.Random, topic: str, words: int) -> str:
    picked = rng.choices(ZH_VOCABULARY, cum_weights=_WEIGHTS, k=words)
    body = "，".join("".join(picked[i : i + 6]) for i in range(0, words, 6))
    return f"{rng.choice(ZH_NAMES)}在{topic}方面记录：{body}。"


def _fact(i: int, rng: random.Random) -> tuple[str, str]:
    code = f"{rng.choice(['amber', 'cobalt', 'quartz', 'saffron', 'teal'])}{i}"
    port = 20000 + i
    return (
        f"The {code} service listens on port {port} and is owned by {rng.choice(NAMES)}.",
        f"which port does the {code} service listen on",
    )


def _zh_fact(i: int, rng: random.Random) -> tuple[str, str]:
    code = f"{rng.choice(ZH_CODES)}{i}"
    return (
        f"{code}服务监听端口{20000 + i}，负责人是{rng.choice(ZH_NAMES)}。",
        f"{code}服务监听哪个端口",
    )


def generate(
    root: Path,
    files: int,
    *,
    paragraphs: int = 6,
    words: int = 40,
    seed: int = 7,
    facts: int = 50,
    lang: str = "en",
) -> list[Fact]:
    """Write ``files`` Markdown files under ``root/memory`` (+ MEMORY.md); returns the facts.

    ``lang="zh"`` writes Chinese notes and questions (words not separated by spaces)."""
    if lang not in ("en", "zh"):
        raise ValueError(f"unknown corpus language {lang!r}; expected 'en' or 'zh'")
    zh = lang == "zh"
    rng = random.Random(seed)
    memory = root / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    planted = set(rng.sample(range(files), min(facts, files)))
    out: list[Fact] = []
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        rel = f"memory/{topic}/{i:06d}.md" if files > 200 else f"memory/{topic}-{i:04d}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if zh:
            label = ZH_TOPICS[i % len(ZH_TOPICS)]
            parts = [f"# {label}笔记 {i}", ""]
            parts += [_zh_paragraph(rng, label, words) + "\n" for _ in range(paragraphs)]
        else:
            parts = [f"# {topic.title()} notes {i}", ""]
            parts += [_paragraph(rng, topic, words) + "\n" for _ in range(paragraphs)]
        if i in planted:
            sentence, question = (_zh_fact if zh else _fact)(i, rng)
            parts.insert(2 + rng.randrange(paragraphs), sentence + "\n")
            out.append(Fact(rel, sentence, question))
        path.write_text("\n".join(parts), encoding="utf-8")
    (root / "MEMORY.md").write_text("# Memory\n\nLong-term notes live in memory/.\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    args = parser.parse_args()
    facts = generate(args.root, args.files, seed=args.seed, lang=args.lang)
    print(f"wrote {args.files} files with {len(facts)} planted facts under {args.root}")


if __name__ == "__main__":
    main()
