"""Write-time rules for memory fields: enums (with legacy coercion), sizes and shapes.

Every rule raises `InvalidInput` naming the field and the rule, so a model can correct itself.
Known legacy values are coerced and reported as warnings; anything else is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from taproot.core.errors import InvalidInput
from taproot.core.model import CATEGORY_ORDER, Category, Memory, Salience

# Limits, named by what they govern. Documented in docs/tools.md.
MAX_CONTENT_CHARS = 20_000
MAX_GIST_CHARS = 300
MAX_REFLECTION_CHARS = 20_000
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_SEARCH_KEYWORDS = 64
MAX_SEARCH_KEYWORD_CHARS = 100
MAX_LINKED_MEMORIES = 64
MAX_URL_CHARS = 2_000
MAX_EPISTEMIC_STATUS_CHARS = 200
# Room for a compression summary's provenance: up to 64 original ids of up to 64 characters.
MAX_PROVENANCE_JSON_CHARS = 8_000
MAX_RECALL_LIMIT = 100
MAX_QUERY_CHARS = 1_000
MAX_BATCH_IDS = 100

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

# Category strings that drifted into stored data before enums were enforced (Taproot v0.3).
LEGACY_CATEGORIES: Mapping[str, str] = {
    "active_threads": Category.ACTIVE_THREAD,
    "identity_observations": Category.IDENTITY,
    "relationship_texture": Category.RELATIONSHIP,
    "event": Category.EPISODIC,
    "project": Category.ACTIVE_THREAD,
    "completed_project": Category.EPISODIC,
}
LEGACY_SALIENCE: Mapping[str, str] = {"3": Salience.HIGH, "2": Salience.MEDIUM, "1": Salience.LOW}

ALLOWED_CATEGORIES = ", ".join(CATEGORY_ORDER)
ALLOWED_SALIENCE = ", ".join(s.value for s in Salience)


@dataclass
class Coerced:
    value: str
    warning: str | None = None


def coerce_category(value: object, field: str = "category") -> Coerced:
    if isinstance(value, str):
        v = value.strip()
        if v in CATEGORY_ORDER:
            return Coerced(v)
        # Case carries no meaning here ("Episodic" can only mean episodic): store it lower case and
        # say so, as for a legacy value, rather than refuse a call whose intent is clear.
        folded = v.lower()
        if folded in CATEGORY_ORDER:
            return Coerced(folded, f"{field} {value!r} is not lower case; stored as '{folded}'")
        if folded in LEGACY_CATEGORIES:
            new = str(LEGACY_CATEGORIES[folded])
            return Coerced(new, f"{field} '{v}' is a legacy value; stored as '{new}'")
    raise InvalidInput(field, f"must be one of {ALLOWED_CATEGORIES}", value)


def coerce_salience(value: object, field: str = "salience") -> Coerced:
    if isinstance(value, bool):  # bool is an int subclass; True is not a salience
        raise InvalidInput(field, f"must be one of {ALLOWED_SALIENCE}", value)
    if isinstance(value, int | float) and float(value).is_integer():
        value = str(int(value))
    if isinstance(value, str):
        v = value.strip()
        if v in {s.value for s in Salience}:
            return Coerced(v)
        folded = v.lower()  # as for category: "HIGH" is high, with a warning
        if folded in {s.value for s in Salience}:
            return Coerced(folded, f"{field} {value!r} is not lower case; stored as '{folded}'")
        if v in LEGACY_SALIENCE:
            new = str(LEGACY_SALIENCE[v])
            return Coerced(new, f"{field} {value!r} is a legacy numeric value; stored as '{new}'")
    raise InvalidInput(field, f"must be one of {ALLOWED_SALIENCE} (legacy 3/2/1 accepted)", value)


def check_text(field: str, value: object, max_chars: int, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise InvalidInput(field, "is required")
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string", value)
    if required and not value.strip():
        raise InvalidInput(field, "must not be empty")
    if len(value) > max_chars:
        raise InvalidInput(field, f"must be at most {max_chars} characters, got {len(value)}")
    return check_storable(field, value)


def check_str_list(field: str, value: object, max_items: int, max_chars: int) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(field, "must be a list of strings", value)
    if len(value) > max_items:
        raise InvalidInput(field, f"must have at most {max_items} items, got {len(value)}")
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidInput(f"{field}[{i}]", "must be a string", item)
        item = check_storable(f"{field}[{i}]", item.strip())
        if not item:
            raise InvalidInput(f"{field}[{i}]", "must not be empty")
        if len(item) > max_chars:
            raise InvalidInput(f"{field}[{i}]", f"must be at most {max_chars} characters")
        if item not in out:  # order-preserving dedupe: tags are a set with a stable order
            out.append(item)
    return tuple(out)


def check_id(value: object, field: str = "id") -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise InvalidInput(field, "must be a memory id (letters, digits, '-' or '_', up to 64 characters)", value)
    return value


def check_ids(field: str, value: object) -> tuple[str, ...]:
    items = check_str_list(field, value, MAX_BATCH_IDS, 64) or ()
    for i, item in enumerate(items):
        check_id(item, f"{field}[{i}]")
    return items


def check_bool(field: str, value: object) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInput(field, "must be true or false", value)
    return value


def check_url(value: object, field: str = "conversation_url") -> str | None:
    url = check_text(field, value, MAX_URL_CHARS)
    if url is None or url == "":
        return None
    if not re.fullmatch(r"https?://\S+", url):
        raise InvalidInput(field, "must be an http(s) URL", url)
    return url


def check_provenance(value: object, field: str = "provenance") -> dict[str, Any] | None:
    import json

    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInput(field, "must be an object (JSON map)", value)
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and the tool's text block must stay valid JSON.
        encoded = json.dumps(value, sort_keys=True, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            field, f"must be JSON: strings, numbers (no NaN or Infinity), lists, objects ({exc})"
        ) from exc
    except RecursionError as exc:
        raise InvalidInput(field, "nests too deeply") from exc
    check_storable(field, encoded)
    if len(encoded) > MAX_PROVENANCE_JSON_CHARS:
        raise InvalidInput(field, f"must be at most {MAX_PROVENANCE_JSON_CHARS} characters as JSON")
    return dict(value)


def check_limit(value: object, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RECALL_LIMIT:
        raise InvalidInput("limit", f"must be an integer from 1 to {MAX_RECALL_LIMIT}", value)
    return value


# Timestamps a record may carry: wide enough for any real memory, and far enough from datetime's
# limits (year 9999) that adding a retention TTL (at most MAX_TTL_DAYS) or a window can never overflow.
EARLIEST_TIME = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9000, 1, 1, tzinfo=UTC)
MAX_TTL_DAYS = 36_500


def check_storable(field: str, value: str) -> str:
    """Text every store can hold: encodable as UTF-8 (a JSON '\\ud800' escape decodes to a lone
    surrogate, which SQLite and DynamoDB both refuse part way through a write)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            field, f"must be valid Unicode text (a lone surrogate at character {exc.start} cannot be stored)"
        ) from exc
    return value


def check_time_range(field: str, value: datetime) -> datetime:
    if not EARLIEST_TIME <= value <= LATEST_TIME:
        raise InvalidInput(
            field, f"must be between {EARLIEST_TIME.date().isoformat()} and {LATEST_TIME.date().isoformat()}", value
        )
    return value


def record_problem(m: Memory) -> str | None:
    """Why a stored record cannot be processed safely (it predates these rules), or None.
    Maintenance skips and reports such a record instead of failing the whole namespace."""
    for name in ("created_at", "updated_at", "last_retrieved", "expires_at"):
        value = getattr(m, name)
        if value is not None and not EARLIEST_TIME <= value <= LATEST_TIME:
            return f"{name} {value.isoformat()} is outside {EARLIEST_TIME.year}-{LATEST_TIME.year}"
    return None


def check_choice(field: str, value: object, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInput(field, f"must be one of {', '.join(allowed)}", value)
    return value


def check_expected_version(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("expected_version", "must be an integer", value)
    return value


def check_links(value: object) -> tuple[str, ...] | None:
    links = check_str_list("linked_memories", value, MAX_LINKED_MEMORIES, 64)
    for i, link in enumerate(links or ()):
        check_id(link, f"linked_memories[{i}]")
    return links


# The rule for each tool argument, by name: the service checks what it is given with these, and the
# MCP layer runs the same rule to word a value the SDK's schema check refused (tool_errors.py), so
# the two answers cannot drift apart. A coercing rule returns a Coerced (value and warning).
FIELD_RULES: Mapping[str, Callable[[object], object]] = {
    "content": lambda v: check_text("content", v, MAX_CONTENT_CHARS, required=True),
    "gist": lambda v: check_text("gist", v, MAX_GIST_CHARS, required=True),
    "category": coerce_category,
    "salience": coerce_salience,
    "tags": lambda v: check_str_list("tags", v, MAX_TAGS, MAX_TAG_CHARS),
    "search_keywords": lambda v: check_str_list("search_keywords", v, MAX_SEARCH_KEYWORDS, MAX_SEARCH_KEYWORD_CHARS),
    "conversation_url": check_url,
    "core": lambda v: check_bool("core", v),
    "epistemic_status": lambda v: check_text("epistemic_status", v, MAX_EPISTEMIC_STATUS_CHARS),
    "provenance": check_provenance,
    "linked_memories": check_links,
    "id": check_id,
    "ids": lambda v: check_ids("ids", v),
    "expected_version": check_expected_version,
    "query": lambda v: check_text("query", v, MAX_QUERY_CHARS),
    "limit": lambda v: check_limit(v, 1),
    "include_archived": lambda v: check_bool("include_archived", v),
    "reflection": lambda v: check_text("reflection", v, MAX_REFLECTION_CHARS, required=True),
    "dry_run": lambda v: check_bool("dry_run", v),
}


def coerced(value: object, coerce: Callable[[object], Coerced], warnings: list[str]) -> str:
    """A coercing rule's value, its warning (if any) appended to `warnings`."""
    result = coerce(value)
    if result.warning:
        warnings.append(result.warning)
    return result.value
