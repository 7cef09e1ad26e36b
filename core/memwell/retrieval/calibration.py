"""Calibrated vector scores: one cosine scale for every embedding model.

Raw cosines mean different things per model: with all-MiniLM-L6-v2 a clear paraphrase scores
0.3-0.6 and unrelated text 0.0-0.2, while other models crowd everything into 0.7-0.9. So a
single ``min_score`` cannot fit them all. memwell measures each model once, on a fixed probe
set shipped here: :data:`PROBE_PAIRS` are questions paired with the note that answers them, on
unrelated topics. Embedding them gives two anchors in the model's own vector space:

- ``unrelated``: the mean cosine of a question and a note that answers another question;
- ``related``: the mean cosine of a question and the note that answers it.

A cosine is placed on that scale, ``x = (cos - unrelated) / (related - unrelated)`` (0 is as
close as unrelated text usually is, 1 as close as a typical answer), and mapped to [0, 1] by a
logistic curve centred at :data:`MIDPOINT` with slope :data:`STEEPNESS`. A hybrid hit is mapped
the same way from its fused score divided by the vector weight (its cosine plus its keyword
evidence, in cosine units), after ranking: the map is strictly increasing, so the ranking is
exactly the uncalibrated one and only the score, and so what ``min_score`` keeps, changes. It
depends only on the model (not on the corpus, so it is the same after every reindex and at
every corpus size), and :data:`CALIBRATION_ID` (method and probe-set hash) is part of the index
identity, so a change to either rebuilds the index.

A multilingual model places a question further from its answer when the two are written in
different scripts (with multilingual-e5-small, English questions sit 0.80 from a Chinese
answer against 0.83 from an English one, and 0.73 from unrelated Chinese notes against 0.74),
so on the one scale a cross-lingual answer looks unrelated. A provider that declares the
languages it matches across (its ``languages``, ISO 639-1 codes, English among them) is also
measured on :data:`TRANSLATED_PROBES` of those languages: the same questions and notes,
asked in one script and answered in the other. That gives ``cross`` anchors, and
:meth:`Calibration.align` places the cosine of a hit written in another script than the
query (:func:`~memwell.retrieval.cjk.other_script`) on the same-script scale, so an answer
ranks and passes the floor alike in either language. Models that declare no such language
(the default all-MiniLM-L6-v2) are measured and scored exactly as before.

How far a question sits from text of the other script also depends on the question: an
encyclopaedia question sits further from every Chinese note than a probe question does
(multilingual-e5-small: 0.70 from the mean Chinese probe note against 0.74), so on the probes'
cross scale its answer looked unrelated. Before alignment a cross-script cosine is therefore
corrected by the query's own distance to that script: its cosine with the mean vector of the
probe notes in the hit's script (``references``), less the probe questions' average
(``baseline``), as CSLS corrects cross-lingual similarities by each side's neighbourhood. The
reference is the fixed probe set, never the corpus, so a score still depends only on the
model and the query.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.cjk import cjk_share, other_script
from memwell.util.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np

    from memwell.contract.embeddings import Vector
else:
    np = lazy_module("numpy")  # only calibrate() needs it: keyword-only searches never do

#: (question, the note that answers it); topics differ pairwise, so cross pairs are unrelated.
PROBE_PAIRS: tuple[tuple[str, str], ...] = (
    ("When does the mobile app launch?", "App store launch is set for March 14th."),
    ("What did the doctor say about my knee?", "Physio said the knee needs six weeks of rest."),
    ("Which books am I reading?", "Reading list: Dune, then The Left Hand of Darkness."),
    ("Where did we go on holiday last summer?", "Spent two weeks on Crete in July with Ana."),
    ("What is the wifi password at the office?", "Office network key is taped under the router."),
    ("How do I restart the database server?", "To restart Postgres run systemctl restart pg."),
    ("What does my daughter want for her birthday?", "Mia keeps asking for a blue bicycle."),
    ("Who is the new team lead?", "Dana takes over the platform team from Monday."),
    ("What should I cook for the dinner party?", "Menu: mushroom risotto and a lemon tart."),
    ("Why did the deployment fail yesterday?", "The deploy broke because a migration timed out."),
    ("How much did the car repair cost?", "Garage invoice for the brakes came to 420 euros."),
    ("Which gym classes do I take?", "I go to spin on Tuesdays and yoga on Fridays."),
    ("What is my landlord's phone number?", "Landlord Mr. Okafor can be reached on 555-0182."),
    ("What did the customer complain about?", "Client was unhappy that invoices arrive late."),
    ("Which wine goes with the fish?", "Chablis pairs best with the sea bass."),
    ("What language is the new service written in?", "The billing service is implemented in Go."),
    ("When does my passport expire?", "Passport is valid until August 2027."),
    ("What music does Sam like?", "Sam listens mostly to jazz and old soul records."),
    ("How did the marathon training go?", "Ran 30 km on Sunday, legs felt strong."),
    ("What is the budget for the kitchen renovation?", "We set aside 15,000 for the new kitchen."),
    ("Which API key does the staging app use?", "Staging reads its token from STAGING_API_KEY."),
    ("What did we learn from the user interviews?", "Users said onboarding takes too many steps."),
    ("Where are the spare house keys?", "Spare keys are in the drawer by the front door."),
    ("What time is the dentist appointment?", "Dentist check-up booked for 9:30 on Thursday."),
)

#: :data:`PROBE_PAIRS` in other scripts, pair for pair (the same facts), by language.
TRANSLATED_PROBES: dict[str, tuple[tuple[str, str], ...]] = {
    "zh": (
        ("手机应用什么时候上线？", "应用商店的上线日期定在三月十四日。"),
        ("医生对我的膝盖怎么说？", "理疗师说膝盖需要休息六周。"),
        ("我在读哪些书？", "书单：先读《沙丘》，然后是《黑暗的左手》。"),
        ("去年夏天我们去哪里度假了？", "七月和安娜在克里特岛待了两个星期。"),
        ("办公室的无线网络密码是什么？", "办公室网络的密钥贴在路由器底下。"),
        ("怎么重启数据库服务器？", "重启 Postgres 要运行 systemctl restart pg。"),
        ("我女儿生日想要什么？", "米娅一直吵着要一辆蓝色自行车。"),
        ("新的团队负责人是谁？", "从周一起由达娜接管平台组。"),
        ("晚宴应该做什么菜？", "菜单：蘑菇烩饭和柠檬挞。"),
        ("昨天的部署为什么失败了？", "部署出错是因为一次数据迁移超时了。"),
        ("修车花了多少钱？", "修车厂开的刹车维修发票是 420 欧元。"),
        ("我上哪些健身课？", "我周二上动感单车课，周五上瑜伽课。"),
        ("房东的电话号码是多少？", "房东奥卡福先生的电话是 555-0182。"),
        ("客户投诉了什么？", "客户不满意发票总是寄得太晚。"),
        ("鱼配什么葡萄酒？", "海鲈鱼配夏布利最合适。"),
        ("新服务是用什么语言写的？", "计费服务是用 Go 实现的。"),
        ("我的护照什么时候过期？", "护照有效期到 2027 年 8 月。"),
        ("萨姆喜欢什么音乐？", "萨姆主要听爵士乐和老的灵魂乐唱片。"),
        ("马拉松训练进行得怎么样？", "周日跑了 30 公里，腿感觉很有力。"),
        ("厨房翻修的预算是多少？", "我们为新厨房留出了一万五千。"),
        ("预发布应用用的是哪个 API 密钥？", "预发布环境从 STAGING_API_KEY 读取令牌。"),
        ("用户访谈让我们学到了什么？", "用户说新手引导的步骤太多了。"),
        ("备用的家门钥匙在哪里？", "备用钥匙在前门旁边的抽屉里。"),
        ("看牙医约在几点？", "牙医检查约在周四九点半。"),
    ),
}

METHOD = "probe-logistic-v1"
MIDPOINT = 0.5
STEEPNESS = 5.0

#: Identifies the method and the probe set; backends store it with the index and rebuild
#: when it changes.
CALIBRATION_ID = (
    METHOD
    + ":"
    + hashlib.sha256(
        json.dumps([PROBE_PAIRS, MIDPOINT, STEEPNESS], ensure_ascii=False).encode()
    ).hexdigest()[:16]
)
CROSS_METHOD = "probe-logistic-cross-v2"


def probe_languages(provider: object) -> tuple[str, ...]:
    """The languages of :data:`TRANSLATED_PROBES` that ``provider`` declares it matches
    English with (its optional ``languages`` attribute); ``()`` for an English-only model."""
    declared = getattr(provider, "languages", None) or ()
    if "en" not in declared:
        return ()
    return tuple(sorted(lang for lang in TRANSLATED_PROBES if lang in declared))


def calibration_id(languages: Sequence[str] = ()) -> str:
    """The calibration's identity for a model measured also in ``languages`` (see
    :func:`probe_languages`): :data:`CALIBRATION_ID` when there are none."""
    if not languages:
        return CALIBRATION_ID
    probes = [PROBE_PAIRS, {lang: TRANSLATED_PROBES[lang] for lang in languages}]
    data = json.dumps([*probes, MIDPOINT, STEEPNESS], ensure_ascii=False).encode()
    return f"{CROSS_METHOD}:{hashlib.sha256(data).hexdigest()[:16]}"


def _check_anchors(unrelated: float, related: float) -> None:
    if not (math.isfinite(unrelated) and math.isfinite(related)):
        raise ValueError("calibration anchors must be finite")
    if related <= unrelated:
        raise ValueError(f"calibration needs related > unrelated, got {related} <= {unrelated}")


class Calibration(msgspec.Struct, frozen=True):
    """A model's two anchors on the cosine scale (see the module docstring); a multilingual
    model's also across scripts: ``cross`` (unrelated, related), measured in ``languages``,
    with the mean probe-note vectors in English and in ``languages`` (``references``) and
    the probe questions' mean cosine with the other script's (``baseline``)."""

    unrelated: float
    related: float
    cross: tuple[float, float] | None = None
    languages: tuple[str, ...] = ()
    references: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    baseline: float = 0.0

    def __post_init__(self) -> None:
        _check_anchors(self.unrelated, self.related)
        if (self.cross is None) != (not self.languages) or (self.cross is None) != (
            self.references is None
        ):
            raise ValueError(
                "cross-script anchors come with the languages and references they were "
                "measured with"
            )
        if self.references is not None and len({len(r) for r in self.references}) != 1:
            raise ValueError("the two reference vectors must have the same dimensions")
        if self.cross is not None:
            _check_anchors(*self.cross)
            inside = (self.cross[0], self.cross[1], self.unrelated, self.related)
            if not all(-1.0 < anchor < 1.0 for anchor in inside):
                raise ValueError("cross-script calibration needs every anchor inside (-1, 1)")

    @property
    def id(self) -> str:
        """The method and probe set that measured it (:func:`calibration_id`)."""
        return calibration_id(self.languages)

    def aligned(self, cosine: float) -> float:
        """A cross-script ``cosine`` placed on the same-script scale: piecewise linear through
        (-1, -1), (cross unrelated, unrelated), (cross related, related) and (1, 1), so
        strictly increasing and within [-1, 1]."""
        if self.cross is None:
            return cosine
        (cross_unrelated, cross_related) = self.cross
        points = ((-1.0, -1.0), (cross_unrelated, self.unrelated), (cross_related, self.related))
        for (x0, y0), (x1, y1) in zip(points, (*points[1:], (1.0, 1.0)), strict=True):
            if cosine <= x1:
                return y0 + (cosine - x0) * (y1 - y0) / (x1 - x0)
        return cosine

    def offset(self, query: str, query_vector: Vector | None) -> float:
        """How much nearer than the probe questions ``query`` (embedded as ``query_vector``)
        sits to notes written in the other script: its cosine with their mean vector, less
        :attr:`baseline`; 0 without the vector or the references."""
        if query_vector is None or self.references is None:
            return 0.0
        reference = self.references[0 if cjk_share(query) > 0.5 else 1]
        return float(np.dot(np.asarray(query_vector, dtype=np.float64), reference)) - self.baseline

    def align(
        self, vector: Sequence[Candidate], query: str, query_vector: Vector | None = None
    ) -> list[Candidate]:
        """Vector hits with the cosine of each one written in another script than ``query``
        less the query's :meth:`offset`, then :meth:`aligned`, best first; the hits
        themselves when there are no cross anchors."""
        if self.cross is None:
            return list(vector)
        moved = []
        offset: float | None = None
        for c in vector:
            if other_script(query, c.text):
                if offset is None:  # once per query, and only when a hit needs it
                    offset = self.offset(query, query_vector)
                score = self.aligned(c.vector_score - offset)
                c = replace(c, vector_score=score, score=score)
            moved.append(c)
        return sorted(moved, key=lambda c: c.vector_score, reverse=True)

    def score(self, cosine: float) -> float:
        """The calibrated score of ``cosine``, in (0, 1), strictly increasing."""
        x = (cosine - self.unrelated) / (self.related - self.unrelated)
        z = STEEPNESS * (x - MIDPOINT)
        if z < -60:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))

    def fused_score(self, fused: float, vector_weight: float) -> float:
        """The calibrated score of a hybrid hit whose fused score is ``fused``.

        ``fused / vector_weight`` is the hit's similarity in cosine units: its cosine plus its
        keyword evidence (``text_weight / vector_weight`` cosine for the best keyword hit).
        The map is monotone in ``fused``, so the fused ranking is kept as it is.
        """
        if vector_weight <= 0:
            return fused
        return self.score(fused / vector_weight)

    def to_json(self) -> dict[str, Any]:
        """What the index stores, with its :attr:`id`."""
        data: dict[str, Any] = {"id": self.id, "unrelated": self.unrelated}
        data["related"] = self.related
        if self.cross is not None and self.references is not None:
            data |= {"cross": list(self.cross), "languages": list(self.languages)}
            data |= {"references": [list(r) for r in self.references], "baseline": self.baseline}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Calibration | None:
        """The stored calibration, or ``None`` when absent or made by another method."""
        if not data:
            return None
        try:
            cross, refs = data.get("cross"), data.get("references")
            stored = cls(
                float(data["unrelated"]),
                float(data["related"]),
                (float(cross[0]), float(cross[1])) if cross is not None else None,
                tuple(str(lang) for lang in data.get("languages") or ()),
                (_floats(refs[0]), _floats(refs[1])) if refs is not None else None,
                float(data.get("baseline", 0.0)),
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        languages = stored.languages
        if any(lang not in TRANSLATED_PROBES for lang in languages):
            return None
        return stored if data.get("id") == calibration_id(languages) else None


def _floats(values: Sequence[Any]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


Embed = Callable[[Sequence[str]], Any]


def _embed(embed: Embed, texts: Sequence[str]) -> Any:
    return np.asarray(embed(texts), dtype=np.float64)


def _anchors(blocks: Sequence[Any]) -> tuple[float, float] | None:
    """(unrelated, related): the mean off-diagonal and diagonal similarity of square
    question-by-note blocks; ``None`` when answers do not score above unrelated notes."""
    count = blocks[0].shape[0]
    related = sum(float(np.trace(b)) for b in blocks) / (count * len(blocks))
    off = sum(float(b.sum() - np.trace(b)) for b in blocks)
    unrelated = off / ((count * count - count) * len(blocks))
    if not related > unrelated + 1e-3:
        return None
    return round(unrelated, 6), round(related, 6)


def calibrate(
    embed_queries: Embed, embed_documents: Embed, languages: Sequence[str] = ()
) -> Calibration | None:
    """Measure a model on :data:`PROBE_PAIRS`, and across scripts on their translations in
    ``languages`` (:func:`probe_languages`); both callables return L2-normalised rows.

    ``None`` when the model does not rate answers above unrelated notes (no usable scale).
    Across scripts, no usable scale is an error: the model declared what it cannot do.
    """
    questions = _embed(embed_queries, [q for q, _ in PROBE_PAIRS])
    notes = _embed(embed_documents, [n for _, n in PROBE_PAIRS])
    same = _anchors([questions @ notes.T])
    if same is None:
        return None
    if not languages:
        return Calibration(*same)
    blocks, translated = [], []
    for lang in languages:
        pairs = TRANSLATED_PROBES[lang]
        translated.append(_embed(embed_documents, [n for _, n in pairs]))
        blocks.append(questions @ translated[-1].T)
        blocks.append(_embed(embed_queries, [q for q, _ in pairs]) @ notes.T)
    cross = _anchors(blocks)
    if cross is None:
        raise ValueError(
            f"the model rates no answer across scripts ({', '.join(languages)} and English) "
            "above unrelated text, though it declares those languages"
        )
    references = (_mean_vector(notes), _mean_vector(np.vstack(translated)))
    baseline = round(float(np.mean([b.mean() for b in blocks])), 6)
    return Calibration(*same, cross, tuple(languages), references, baseline)


def _mean_vector(rows: Any) -> tuple[float, ...]:
    return tuple(round(float(v), 6) for v in rows.mean(axis=0))
