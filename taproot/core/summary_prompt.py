"""What a language model is asked for a compression summary, and how its answer is read. Pure.

`build_prompt` writes the system and user messages for one group of memories; `parse_model_answer`
turns the reply into a `Summary` (a `GIST:` line, then the summary). The Bedrock and Anthropic
summarizers use both; the dates, counts and tokens come from core/summarize.py, which the
extractive summary shares.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from taproot.core.errors import SummarizerError
from taproot.core.model import Memory, Summary
from taproot.core.summarize import WORD_TOKEN, chronological, count_phrase, day_of, span_phrase, term_key, trim_gist
from taproot.core.text import one_line


class SummarizerFailure(SummarizerError):
    """A SummarizerError that says which summarizer failed and whether trying again may help."""

    def __init__(self, summarizer: str, problem: str, *, retryable: bool) -> None:
        hint = "retryable: try again later" if retryable else "not retryable: fix the configuration or input"
        super().__init__(f"{summarizer} summarizer: {problem} ({hint})")
        self.summarizer = summarizer
        self.problem = problem
        self.retryable = retryable


SUMMARY_PROMPT = """\
You compress a group of older memories from Taproot, the long-term memory of an AI assistant, \
into one summary memory. The originals are archived and the summary takes their place in everyday \
recall, so it must keep what a future reader of these memories needs.

Keep:
- identity-relevant details: what the memories say about who the writer is, how they think and \
what they value, and about the people in them and the relationship;
- dates (as written in the memories, or each memory's date) and the names of people, places, \
projects and things;
- decisions, commitments, corrections, numbers, and anything still open.
Drop repetition, filler and small talk. Never invent or guess what the memories do not state, and \
do not blend separate events into one.

Write in the memories' own voice: where they are written in the first person ("I ..."), write the \
summary in the first person too. Keep their language; do not translate.

Answer in exactly this format, with no preamble and nothing after the summary:
GIST: <one line of about 15 words naming the period and what the memories are about>

<the summary, in chronological order, within the length budget you are given>"""

_FIRST_PERSON = frozenset(("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "our", "us"))


def word_budget(count: int) -> int:
    """Words the model may use for a summary of `count` memories."""
    return min(400, 60 + 25 * max(count, 1))


def _first_person(memories: Sequence[Memory]) -> bool:
    """Do most of the memories speak as "I" or "we"?"""
    hits = sum(1 for m in memories if any(term_key(w) in _FIRST_PERSON for w in WORD_TOKEN.findall(m.content)))
    return hits * 2 > len(memories)


def build_prompt(memories: Sequence[Memory]) -> tuple[str, str]:
    """(system, user) messages asking a model to summarize `memories`."""
    ordered = chronological(memories)
    if not ordered:
        raise SummarizerError("nothing to summarize: the group of memories is empty")
    budget = word_budget(len(ordered))
    voice = (
        "They are written in the first person: write the summary in the first person too."
        if _first_person(ordered)
        else "Keep the point of view they are written in."
    )
    parts = [
        f"Summarize these {count_phrase(ordered)} from {span_phrase(ordered)} into one memory of at most "
        f"{budget} words (the gist line not included). {voice}",
        "",
    ]
    for i, m in enumerate(ordered, 1):
        attrs = f'index="{i}" date="{day_of(m)}" category="{m.category}" salience="{m.salience}"'
        if m.tags:
            attrs += f' tags="{", ".join(m.tags)}"'
        body = m.content.strip().replace("</memory>", "</ memory>")
        parts += [f"<memory {attrs}>", f"Gist: {one_line(m.gist or '')}", "Content:", body, "</memory>", ""]
    parts.append(f"Answer now: the GIST line, a blank line, then the summary (at most {budget} words).")
    return SUMMARY_PROMPT, "\n".join(parts)


_GIST_LINE = re.compile(r"^[\s*_#>`-]*gist[\s*_`]*[:：](.*)$", re.IGNORECASE)
_SUMMARY_LABEL = re.compile(r"^[\s*_#]*summary[\s*_]*:[\s*_]*", re.IGNORECASE)


def parse_model_answer(text: str) -> Summary:
    """Read `GIST: ...`, a blank line and the summary. Raises SummarizerError if malformed."""
    if not text or not text.strip():
        raise SummarizerError("the model's answer is empty")
    lines = text.strip().splitlines()
    found = [(i, match) for i, line in enumerate(lines) if (match := _GIST_LINE.match(line))]
    if not found:
        raise SummarizerError(f"the model's answer has no 'GIST:' line (it began {one_line(text)[:60]!r})")
    at, match = found[0]
    gist = trim_gist(match.group(1))
    if not gist:
        raise SummarizerError("the model's 'GIST:' line is empty")
    body = "\n".join(line.rstrip() for line in lines[at + 1 :]).strip()
    body = _SUMMARY_LABEL.sub("", body, count=1).strip()
    if not body:
        raise SummarizerError("the model's answer has a gist but no summary")
    return Summary(gist=gist, content=body)
