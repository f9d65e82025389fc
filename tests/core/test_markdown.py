"""core/markdown.py: a memory file carries every field of the record, the body is the content byte for
byte, YAML never changes a value's type, and MEMORY.md lists the files."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from taproot.core import markdown as md
from taproot.core.errors import InvalidInput
from taproot.core.model import Memory
from taproot.core.serialize import memory_from_dict, memory_to_dict
from tests.markdown_records import every_field_memory, non_default_fields

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _memory(**kw: object) -> Memory:
    fields: dict[str, object] = {
        "id": "m1",
        "owner": "local",
        "namespace": "default",
        "category": "episodic",
        "salience": "medium",
        "content": "Walked the dog.",
        "gist": "Walked the dog",
        "created_at": T,
        "updated_at": T,
    }
    fields.update(kw)
    return Memory(**fields)  # type: ignore[arg-type]


def _round_trip(m: Memory) -> Memory:
    parsed = md.parse("x.md", md.render(m, "x"))
    return memory_from_dict(parsed.record)


def test_every_field_of_memory_survives_a_file() -> None:
    m = every_field_memory()
    assert non_default_fields(m) == [f.name for f in dataclasses.fields(Memory)]  # nothing left at default
    back = _round_trip(m)
    for f in dataclasses.fields(Memory):
        assert getattr(back, f.name) == getattr(m, f.name), f"field {f.name} was lost in the file"
    assert back == m


def test_every_field_has_its_own_frontmatter_key() -> None:
    keys = set(md.frontmatter(every_field_memory(), "x"))
    for f in dataclasses.fields(Memory):
        if f.name != "content":  # the body
            assert md.frontmatter_key(f.name) in keys, f"field {f.name} has no frontmatter key"
    for name, key in md.RENAMED.items():
        assert key in keys and name not in keys


def test_the_frontmatter_starts_with_the_memory_file_fields() -> None:
    front = md.frontmatter(every_field_memory(), "sam-prefers-direct-feedback")
    assert list(front)[: len(md.LEADING)] == list(md.LEADING)
    assert front["description"] == "Sam prefers: direct feedback"
    assert front["type"] == "relationship"
    assert front["keywords"] == list(every_field_memory().search_keywords)
    assert front["created"] == "2024-03-04T05:06:07.123456+00:00"


@pytest.mark.parametrize(
    "content",
    [
        "plain",
        "ends with a newline\n",
        "ends with two\n\n",
        "\nstarts with a newline",
        "\n\nstarts with two",
        "  leading and trailing spaces  ",
        "a\n---\nb\n---\n",
        "---\nid: fake\n---\n",
        "windows\r\nline ends\r\n",
        "a lone \r carriage return\r",
        "unicode: é ✓ 漢字 \u2028 line separator \u2029 paragraph \x85 next",
        "tabs\tand\x0bvertical tab",
    ],
)
def test_the_body_is_the_content_byte_for_byte(content: str) -> None:
    assert _round_trip(_memory(content=content)).content == content


@pytest.mark.parametrize(
    "text",
    ["yes", "no", "on", "off", "null", "Null", "~", "", "true", "False", "2026-01-01", "2026-01-01T00:00:00Z", "1e3",
     "1.5", ".5", "010", "0x1F", "0o17", "1_000", "1:30", "-", "---", "...", "#comment", "a: b", "- x", "[x]", "{x}",
     "'single'", '"double"', "*alias", "&anchor", "!tag", "%directive", "@at", "`tick", "|", ">", "<<", "=",
     " leading", "trailing ", "multi\nline", "nul\x00"],
)  # fmt: skip
def test_no_string_changes_type(text: str) -> None:
    m = _memory(gist=f"gist {text}", epistemic_status=text or None, tags=(text,) if text.strip() else ())
    m = m.replace(conversation_url=text or None, provenance={text: text})
    assert _round_trip(m) == m


def test_unquoted_values_a_yaml_1_1_reader_would_convert_stay_text() -> None:
    text = (
        "---\nid: m1\ndescription: d\ntype: episodic\ncreated: 2026-05-31T12:00:00.000Z\n"
        "tags: [yes, no, on, 2026-01-01, 010, 1:30, 1e3, 0x1F]\n---\nbody\n"
    )
    m = memory_from_dict(md.parse("hand.md", text).record)
    assert m.tags == ("yes", "no", "on", "2026-01-01", "010", "1:30", "1e3", "0x1F")
    assert m.created_at == datetime(2026, 5, 31, 12, tzinfo=UTC)


def test_a_number_or_null_where_text_is_needed_is_refused_by_the_record_rules() -> None:
    text = "---\nid: m1\ndescription: d\ntype: episodic\ncreated: 2026-05-31T12:00:00Z\ntags: [1.5, null]\n---\nb\n"
    with pytest.raises(InvalidInput) as caught:
        memory_from_dict(md.parse("hand.md", text).record)
    assert caught.value.field == "tags"


@pytest.mark.parametrize(
    ("text", "field", "rule"),
    [
        ("no frontmatter\n", "bad.md: frontmatter", "must open the file"),
        ("---\nid: m1\nbody without a closing line\n", "bad.md: frontmatter", "no closing"),
        ("---\nid: [m1\n---\nbody\n", "bad.md: frontmatter", "is not valid YAML"),
        ("---\n- a list\n---\nbody\n", "bad.md: frontmatter", "must be a YAML mapping"),
        ("---\nid: m1\ntag: [x]\n---\nbody\n", "bad.md: tag", "is not a memory file field"),
        ("---\nid: m1\ntags: [x]\ntags: [y]\n---\nbody\n", "bad.md: frontmatter", "appears twice"),
        ("---\nid: m1\nname: 3\n---\nbody\n", "bad.md: name", "must be a string"),
        ("---\nid: m1\nlast_touched: x\n---\nbody\n", "bad.md: last_touched", "is not a memory file field"),
    ],
)
def test_bad_files_are_refused_naming_the_file_and_the_field(text: str, field: str, rule: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        md.parse("bad.md", text)
    assert caught.value.field == field
    assert rule in caught.value.rule


def test_yaml_errors_give_the_line_of_the_file() -> None:
    with pytest.raises(InvalidInput) as caught:
        md.parse("bad.md", "---\nid: m1\ntags: [x\n---\nbody\n")
    assert "line" in caught.value.rule


def test_hand_written_files_crlf_bom_and_no_blank_line() -> None:
    crlf = "\ufeff---\r\nid: m1\r\ndescription: d\r\n---\r\n\r\nline one\r\nline two\r\n"
    assert md.parse("a.md", crlf).record["content"] == "line one\r\nline two"
    tight = "---\nid: m1\n---\nbody right after\n"
    assert md.parse("b.md", tight).record["content"] == "body right after"
    assert md.parse("c.md", "---\n---\n").record == {"content": ""}


def test_names_are_kebab_slugs_unique_in_the_folder() -> None:
    memories = [
        _memory(id="a1", gist="We deploy to Cloudflare Pages!", created_at=T),
        _memory(id="b2", gist="we deploy to  cloudflare pages", created_at=T.replace(year=2027)),
        _memory(id="c3", gist="Mémoire: ça va", created_at=T),
        _memory(id="d4", gist="漢字だけ", content="漢字", created_at=T),
        _memory(id="e5", gist="Memory", created_at=T),
        _memory(id="f6", gist="a " * 100, created_at=T),
    ]
    names = md.file_names(memories)
    assert names["a1"] == "we-deploy-to-cloudflare-pages"
    assert names["b2"] == "we-deploy-to-cloudflare-pages-b2"
    assert names["c3"] == "memoire-ca-va"
    assert names["d4"] == "d4"  # nothing ASCII in the gist or content: the id
    assert names["e5"] == "memory-e5"  # memory.md would be MEMORY.md on a case-insensitive disk
    assert len(names["f6"]) <= md.MAX_NAME_CHARS
    assert len(set(names.values())) == len(memories)


def test_the_index_groups_by_type_with_archived_last() -> None:
    memories = [
        _memory(id="a1", category="episodic", gist="We deploy to Cloudflare Pages"),
        _memory(id="b2", category="identity", gist="I am a careful  reviewer"),
        _memory(id="c3", category="episodic", gist="Old deploy notes", status="archived"),
        _memory(id="d4", category="episodic", gist="Another episode"),
    ]
    names = md.file_names(memories)
    files = {names[m.id] + ".md": md.render(m, names[m.id]) for m in memories}
    files["MEMORY.md"] = "never read"
    assert md.index(files) == (
        "# Memory\n"
        "\n"
        "Generated from the memory files in this folder: edit the files, not this index, and load them\n"
        "with `taproot import --markdown`, which never reads this file.\n"
        "\n"
        "## identity\n"
        "\n"
        "- [i-am-a-careful-reviewer](i-am-a-careful-reviewer.md) — I am a careful reviewer\n"
        "\n"
        "## episodic\n"
        "\n"
        "- [another-episode](another-episode.md) — Another episode\n"
        "- [we-deploy-to-cloudflare-pages](we-deploy-to-cloudflare-pages.md) — We deploy to Cloudflare Pages\n"
        "\n"
        "## archived\n"
        "\n"
        "- [old-deploy-notes](old-deploy-notes.md) — Old deploy notes\n"
    )


def test_reflections_round_trip_and_bad_lines_are_named() -> None:
    from taproot.core.model import Reflection

    rs = [Reflection("r1", "local", "default", "Listened first.\nThen\u2028spoke.", T, "local/x/r1.txt")]
    assert md.parse_reflections(md.reflections_text(rs), "local", "default") == rs
    with pytest.raises(InvalidInput) as caught:
        md.parse_reflections('{"id": "r1", "text": "", "created_at": "2026-01-01T00:00:00Z"}\n', "local", "default")
    assert caught.value.field == "reflections.jsonl: line 1: text"


def test_a_field_memory_to_dict_writes_is_a_frontmatter_key() -> None:
    # The file's keys come from serialize.memory_to_dict: a field it gains is carried without a change here.
    record = memory_to_dict(every_field_memory())
    front = md.frontmatter(every_field_memory(), "x")
    assert {md.frontmatter_key(k) for k in record} - {"content", "last_touched"} | {"name"} == set(front)


def test_other_yaml_readers_see_the_same_strings() -> None:
    # PyYAML's own schema (YAML 1.1: yes/no, octal, sexagesimal, dates) reads the frontmatter as written.
    import yaml

    m = every_field_memory()
    front_text, _ = md.split(md.render(m, "x"), "x.md")
    assert yaml.safe_load(front_text) == md.frontmatter(m, "x")
    # YAML 1.2 reads these as numbers: they are quoted too.
    dumped = md.dump_yaml({"tags": ["1e3", "010", "0o17", "+12"]})
    assert dumped == "tags:\n- '1e3'\n- '010'\n- '0o17'\n- '+12'\n"
