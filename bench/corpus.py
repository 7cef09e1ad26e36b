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


def _vocabulary(size: int = 6000, seed: int = 11) -> list[str]:
    """Domain words first, then pronounceable pseudo-words; used with Zipf frequencies."""
    rng = random.Random(seed)
    words = list(WORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


VOCABULARY = _vocabulary()
# Zipf's law (exponent 1.1) so, as in real notes, a few words are everywhere and most are rare.
_WEIGHTS = list(itertools.accumulate(1.0 / (rank**1.1) for rank in range(1, len(VOCABULARY) + 1)))


def _paragraph(rng: random.Random, topic: str, words: int) -> str:
    body = " ".join(rng.choices(VOCABULARY, cum_weights=_WEIGHTS, k=words))
    return f"{rng.choice(NAMES)} noted on {topic}: {body}."


def _fact(i: int, rng: random.Random) -> tuple[str, str]:
    code = f"{rng.choice(['amber', 'cobalt', 'quartz', 'saffron', 'teal'])}{i}"
    port = 20000 + i
    return (
        f"The {code} service listens on port {port} and is owned by {rng.choice(NAMES)}.",
        f"which port does the {code} service listen on",
    )


def generate(
    root: Path, files: int, *, paragraphs: int = 6, words: int = 40, seed: int = 7, facts: int = 50
) -> list[Fact]:
    """Write ``files`` Markdown files under ``root/memory`` (+ MEMORY.md); returns the facts."""
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
        parts = [f"# {topic.title()} notes {i}", ""]
        parts += [_paragraph(rng, topic, words) + "\n" for _ in range(paragraphs)]
        if i in planted:
            sentence, question = _fact(i, rng)
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
    args = parser.parse_args()
    facts = generate(args.root, args.files, seed=args.seed)
    print(f"wrote {args.files} files with {len(facts)} planted facts under {args.root}")


if __name__ == "__main__":
    main()
