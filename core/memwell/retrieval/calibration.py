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
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from memwell.util.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np
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


class Calibration(msgspec.Struct, frozen=True):
    """A model's two anchors on the cosine scale (see the module docstring)."""

    unrelated: float
    related: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.unrelated) and math.isfinite(self.related)):
            raise ValueError("calibration anchors must be finite")
        if self.related <= self.unrelated:
            raise ValueError(
                f"calibration needs related > unrelated, got {self.related} <= {self.unrelated}"
            )

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
        """What the index stores, with :data:`CALIBRATION_ID`."""
        return {"id": CALIBRATION_ID, "unrelated": self.unrelated, "related": self.related}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Calibration | None:
        """The stored calibration, or ``None`` when absent or made by another method."""
        if not data or data.get("id") != CALIBRATION_ID:
            return None
        try:
            return cls(float(data["unrelated"]), float(data["related"]))
        except (KeyError, TypeError, ValueError):
            return None


def calibrate(
    embed_queries: Callable[[Sequence[str]], Any], embed_documents: Callable[[Sequence[str]], Any]
) -> Calibration | None:
    """Measure a model on :data:`PROBE_PAIRS`; both callables return L2-normalised rows.

    ``None`` when the model does not rate answers above unrelated notes (no usable scale).
    """
    q = np.asarray(embed_queries([q for q, _ in PROBE_PAIRS]), dtype=np.float64)
    n = np.asarray(embed_documents([n for _, n in PROBE_PAIRS]), dtype=np.float64)
    sims = q @ n.T
    count = len(PROBE_PAIRS)
    related = float(np.trace(sims) / count)
    unrelated = float((sims.sum() - np.trace(sims)) / (count * count - count))
    if not related > unrelated + 1e-3:
        return None
    return Calibration(unrelated=round(unrelated, 6), related=round(related, 6))
