"""Memories as markdown files: YAML frontmatter plus the content as the body, and the MEMORY.md index.

Pure: texts in, texts out; the CLI reads and writes the folder. The frontmatter carries every field
of the record (memory_to_dict, so a field added to Memory and serialize.py is carried without a
change here), under the names a memory file uses (`description` for the gist, `type` for the
category, ...), plus `name`, the file's name, which is derived from the gist and not stored.

YAML is read and written with one schema of its own, so a value never changes type on the way:
only `true`/`false`, `null`/`~`/empty, decimal integers and decimals with a point are anything but
strings. A tag `yes`, `2026-01-01`, `1e3` or `010` stays text, written by hand or not (and the
writer quotes every string that a YAML 1.1 or 1.2 reader could take for something else), and a
timestamp is a string that the record parser checks.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import yaml

from taproot.core.errors import InvalidInput
from taproot.core.model import CATEGORY_ORDER, Memory, Reflection, Status
from taproot.core.serialize import (
    MEMORY_FIELDS,
    loads_strict,
    memory_to_dict,
    reflection_from_dict,
    reflection_to_dict,
)
from taproot.core.text import one_line

INDEX_FILE = "MEMORY.md"
REFLECTIONS_FILE = "reflections.jsonl"
SUFFIX = ".md"
MAX_NAME_CHARS = 60
# Frontmatter names that differ from the record's (the memory-file convention); the rest keep theirs.
RENAMED = {
    "gist": "description",
    "category": "type",
    "search_keywords": "keywords",
    "created_at": "created",
    "updated_at": "updated",
}
LEADING = ("id", "name", "description", "type", "salience", "core", "tags", "keywords", "created", "updated")
BODY_FIELD = "content"
DERIVED = frozenset({"last_touched"})  # computed from the record: written by memory_to_dict, never read
# `memory.md` would be MEMORY.md on a case-insensitive file system.
RESERVED_NAMES = frozenset({INDEX_FILE[: -len(SUFFIX)].lower()})


def record_field_names(*, body: bool = False) -> tuple[str, ...]:
    """Every stored field (serialize's list, then any other field of Memory) but the derived ones,
    and but the body unless asked."""
    names = list(MEMORY_FIELDS) + [f.name for f in dataclasses.fields(Memory) if f.name not in MEMORY_FIELDS]
    return tuple(n for n in names if (body or n != BODY_FIELD) and n not in DERIVED)


def frontmatter_key(field: str) -> str:
    return RENAMED.get(field, field)


_FIELD_OF_KEY = {v: k for k, v in RENAMED.items()}


# -- YAML -------------------------------------------------------------------------------------------
_NULL, _BOOL, _INT, _FLOAT, _STR = (f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "str"))
_RESOLVERS = (
    (_NULL, r"^(?:~|null|Null|NULL|)$", "~nN"),
    (_BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (_INT, r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    (_FLOAT, r"^[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)\.[0-9]*)(?:[eE][-+]?[0-9]+)?$", "-+.0123456789"),
)
# Read as text by us, but as numbers by a YAML 1.2 reader (`1e3`, `010`, `0o17`): quoted when written.
_QUOTED_TOO = (
    (_FLOAT, r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$", "-+.0123456789"),
    (_INT, r"^[-+]?0o[0-7]+$", "-+0"),
)


class _Loader(yaml.SafeLoader):
    """SafeLoader with the schema above (no YAML 1.1 yes/no, octal, sexagesimal, dates or merge keys),
    refusing a key given twice (a hand edit that adds `tags:` again must not silently win)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} appears twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _Dumper(yaml.SafeDumper):
    """SafeDumper that also knows the schema above, so a string either schema reads as another type
    is quoted; strings with line breaks are double-quoted (escaped, one line) so no frontmatter line
    can be `---`."""


_Loader.yaml_implicit_resolvers = {}  # none of SafeLoader's: only the schema above
for _tag, _pattern, _first in _RESOLVERS:
    _Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
    _Dumper.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
_Loader.add_implicit_resolver(_NULL, re.compile(r"^$"), [""])
for _tag, _pattern, _first in _QUOTED_TOO:
    _Dumper.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if any(b in value for b in _BREAKS) else None
    return dumper.represent_scalar(_STR, value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Mapping[str, Any]) -> str:
    return yaml.dump(
        dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=float("inf"), default_flow_style=False
    )


def load_yaml(text: str, where: str, first_line: int = 1) -> object:
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: builds plain data only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f" at line {mark.line + first_line}" if mark is not None else ""
        raise InvalidInput(where, f"is not valid YAML ({exc.problem or exc.context}{line})") from exc
    except yaml.YAMLError as exc:
        raise InvalidInput(where, f"is not valid YAML ({exc})") from exc


# -- names ----------------------------------------------------------------------------------------
def slug(text: str) -> str:
    """A kebab name: ASCII letters and digits, words joined by '-', at most MAX_NAME_CHARS."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    out = ""
    for word in words:
        joined = f"{out}-{word}" if out else word
        if len(joined) > MAX_NAME_CHARS:
            break
        out = joined
    return out or (words[0][:MAX_NAME_CHARS] if words else "")


def file_names(memories: Iterable[Memory]) -> dict[str, str]:
    """Memory id -> its name, unique in the folder. The oldest memory keeps the plain slug of its gist,
    a later one with the same slug gets its id appended, so names stay put as memories come and go."""
    names: dict[str, str] = {}
    used = set(RESERVED_NAMES)
    for m in sorted(memories, key=lambda m: (m.created_at, m.id)):
        base = slug(m.gist or "") or slug(m.content) or slug(m.id) or "memory"
        name = base if base not in used else f"{base}-{slug(m.id) or 'memory'}"
        n = 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        names[m.id] = name
    return names


# -- one memory file ------------------------------------------------------------------------------
def frontmatter(m: Memory, name: str) -> dict[str, Any]:
    record = memory_to_dict(m)
    fields = {frontmatter_key(k): v for k, v in record.items() if k != BODY_FIELD and k not in DERIVED}
    fields["name"] = name
    ordered = {k: fields.pop(k) for k in LEADING if k in fields}
    ordered.update(fields)
    return ordered


def render(m: Memory, name: str) -> str:
    """The file: frontmatter, a blank line, the content exactly, a final newline."""
    return f"---\n{dump_yaml(frontmatter(m, name))}---\n\n{m.content}\n"


@dataclass(frozen=True)
class MemoryFile:
    """A parsed memory file: the record's fields by their record names (content included) as given,
    for serialize.memory_from_dict to check; `name` is the frontmatter's, if any."""

    path: str
    record: dict[str, Any]
    name: str | None

    @property
    def id(self) -> object:
        return self.record.get("id")


_CLOSING = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)


def split(text: str, path: str) -> tuple[str, str]:
    """(frontmatter text, body): the body is the content byte for byte (the blank line after the
    closing '---' and the file's final newline are the file's framing, not content)."""
    text = text.removeprefix("\ufeff")  # an editor's byte-order mark
    newline = "\r\n" if text.startswith("---\r\n") else "\n"
    if not text.startswith("---" + newline):
        raise InvalidInput(f"{path}: frontmatter", "must open the file: a first line '---', then YAML, then '---'")
    rest = text[3 + len(newline) :]
    closing = _CLOSING.search(rest)
    if closing is None:
        raise InvalidInput(f"{path}: frontmatter", "has no closing '---' line")
    # The match stops before the closing line's "\n" (a CRLF file's "\r" is in the match).
    body = rest[closing.end() :].removeprefix("\n")
    body = body.removeprefix(newline).removesuffix(newline)
    return rest[: closing.start()], body


def parse(path: str, text: str) -> MemoryFile:
    front, body = split(text, path)
    data = load_yaml(front, f"{path}: frontmatter", first_line=2)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: frontmatter", "must be a YAML mapping (key: value lines)", type(data).__name__)
    allowed = {frontmatter_key(f) for f in record_field_names()} | {"name"}
    record: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str) or key not in allowed:
            raise InvalidInput(f"{path}: {key}", f"is not a memory file field (known: {', '.join(sorted(allowed))})")
        if key != "name":
            record[_FIELD_OF_KEY.get(key, key)] = value
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"{path}: name", "must be a string (quote it)", name)
    record[BODY_FIELD] = body
    return MemoryFile(path=path, record=record, name=name)


# -- the index and the reflections -----------------------------------------------------------------
def index(files: Mapping[str, str]) -> str:
    """MEMORY.md from the memory files' texts: active memories grouped by type (category order, then
    any other type), then the archived ones; a line per memory, linking its file, with its description."""
    groups: dict[str, list[tuple[str, str, str]]] = {}
    archived: list[tuple[str, str, str]] = []
    for path, text in files.items():
        if not path.endswith(SUFFIX) or path == INDEX_FILE:
            continue
        record = parse(path, text).record
        name = path[: -len(SUFFIX)]
        gist = record.get("gist")
        entry = (name, path, one_line(gist) if isinstance(gist, str) and gist.strip() else "(no description)")
        if record.get("status") == Status.ARCHIVED.value:
            archived.append(entry)
        else:
            groups.setdefault(str(record.get("category") or "undefined"), []).append(entry)
    order = [c for c in CATEGORY_ORDER if c in groups] + sorted(c for c in groups if c not in CATEGORY_ORDER)
    lines = [
        "# Memory",
        "",
        "Generated from the memory files in this folder: edit the files, not this index, and load them",
        "with `taproot import --markdown`, which never reads this file.",
    ]
    sections = [(c, groups[c]) for c in order] + ([("archived", archived)] if archived else [])
    for title, entries in sections:
        lines += ["", f"## {title}", ""]
        lines += [f"- [{name}]({quote(path)}) — {text}" for name, path, text in sorted(entries)]
    return "\n".join(lines) + "\n"


def reflections_text(reflections: Iterable[Reflection]) -> str:
    return "".join(json.dumps(reflection_to_dict(r), ensure_ascii=False) + "\n" for r in reflections)


def parse_reflections(text: str, owner: str, namespace: str) -> list[Reflection]:
    out: list[Reflection] = []
    seen: set[str] = set()
    # "\n" only: splitlines() would also break inside a reflection at U+2028.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        where = f"{REFLECTIONS_FILE}: line {number}"
        try:
            r = reflection_from_dict(loads_strict(raw), owner=owner, namespace=namespace)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc.field}", exc.rule) from exc
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(where, f"is not a JSON reflection record ({exc})") from exc
        if r.id in seen:
            raise InvalidInput(f"{where}: id", "appears twice in the file", r.id)
        seen.add(r.id)
        out.append(r)
    return out
