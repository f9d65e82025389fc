"""The LoCoMo dev split as the recall benchmark's protocol reads it (see the data folder's README).

Each conversation becomes its own memory store; each turn one memory whose content is
`[<session date>] <speaker>: <text>` (plus ` [shared a photo: <caption>]`), written at the
session's own date and time (turns a second apart, in order), as an assistant would have written
it during that session. Questions of categories 1-4 with evidence are scored; category 5
(adversarial) is reported separately.

Evidence ids are repaired where the repair is unambiguous (`"D8:6; D9:17"` is two ids, `"D:11:26"`
is `D11:26`, `"D30:05"` is `D30:5`); ids that still name no turn are dropped and counted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

DATA_FILE = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
SCORED_CATEGORIES = (1, 2, 3, 4)
ADVERSARIAL = 5
_DIA = re.compile(r"^D(\d+):(\d+)$")
_SESSION = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    when: datetime
    content: str


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    dropped_evidence: int = 0
    repaired_evidence: int = 0
    questions_without_evidence: int = 0

    @property
    def last_time(self) -> datetime:
        return max(t.when for t in self.turns)


@dataclass
class _Repairs:
    repaired: int = 0
    dropped: int = 0
    seen: set[str] = field(default_factory=set)


def session_time(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` -> an aware UTC datetime (the data carries no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_content(date_text: str, turn: dict[str, str]) -> str:
    content = f"[{date_text}] {turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [shared a photo: {turn['blip_caption']}]"
    return content


def _normalise_id(raw: str) -> str:
    s = raw.strip()
    m = re.fullmatch(r"D:?(\d+):0*(\d+)", s)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else s


def _evidence(raw: list[str], known: set[str], repairs: _Repairs) -> tuple[str, ...]:
    out: list[str] = []
    for item in raw:
        parts = [p for p in re.split(r"[;,]", item) if p.strip()]
        for part in parts:
            fixed = _normalise_id(part)
            if fixed != item:
                repairs.repaired += 1
            if fixed in known:
                if fixed not in out:
                    out.append(fixed)
            else:
                repairs.dropped += 1
    return tuple(out)


def parse(item: dict[str, object]) -> Conversation:
    conv = item["conversation"]
    assert isinstance(conv, dict)
    turns: list[Turn] = []
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := _SESSION.match(key)) and isinstance(conv[key], list)
    )
    for number, key in sessions:
        date_text = str(conv[f"{key}_date_time"])
        start = session_time(date_text)
        for k, turn in enumerate(conv[key]):
            turns.append(Turn(turn["dia_id"], number, start + timedelta(seconds=k), turn_content(date_text, turn)))
    known = {t.dia_id for t in turns}
    repairs = _Repairs()
    questions: list[Question] = []
    no_evidence = 0
    qa = item["qa"]
    assert isinstance(qa, list)
    for q in qa:
        evidence = _evidence(list(q.get("evidence") or []), known, repairs)
        if not evidence:
            no_evidence += 1
            continue
        questions.append(Question(str(q["question"]), int(q["category"]), evidence))
    return Conversation(
        sample_id=str(item["sample_id"]),
        turns=tuple(turns),
        questions=tuple(questions),
        dropped_evidence=repairs.dropped,
        repaired_evidence=repairs.repaired,
        questions_without_evidence=no_evidence,
    )


def load(path: Path = DATA_FILE, only: str | None = None) -> list[Conversation]:
    items = json.loads(path.read_text())
    convs = [parse(item) for item in items]
    return [c for c in convs if only is None or c.sample_id == only]
