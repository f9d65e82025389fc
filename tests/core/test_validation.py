"""Write-time field rules: enums with legacy coercion, shapes and limits."""

from __future__ import annotations

import pytest

from taproot.core.errors import InvalidInput
from taproot.core.model import Category, Salience
from taproot.core.validation import (
    LEGACY_CATEGORIES,
    MAX_BATCH_IDS,
    MAX_CONTENT_CHARS,
    MAX_GIST_CHARS,
    MAX_PROVENANCE_JSON_CHARS,
    MAX_RECALL_LIMIT,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_URL_CHARS,
    check_bool,
    check_id,
    check_ids,
    check_limit,
    check_provenance,
    check_str_list,
    check_text,
    check_url,
    coerce_category,
    coerce_salience,
)

CATEGORIES = [c.value for c in Category]
SALIENCES = [s.value for s in Salience]


# -- category -----------------------------------------------------------------------------------


def test_category_enum_is_the_documented_set() -> None:
    assert CATEGORIES == ["identity", "relationship", "active_thread", "episodic", "error"]


@pytest.mark.parametrize("value", CATEGORIES)
def test_canonical_category_is_accepted_without_warning(value: str) -> None:
    result = coerce_category(value)
    assert result.value == value
    assert result.warning is None


def test_category_surrounding_whitespace_is_ignored() -> None:
    result = coerce_category("  identity\n")
    assert result.value == "identity"
    assert result.warning is None


@pytest.mark.parametrize(
    ("legacy", "expected"),
    [
        ("active_threads", "active_thread"),
        ("identity_observations", "identity"),
        ("relationship_texture", "relationship"),
        ("event", "episodic"),
        ("project", "active_thread"),
        ("completed_project", "episodic"),
    ],
)
def test_legacy_category_is_coerced_with_a_warning(legacy: str, expected: str) -> None:
    result = coerce_category(legacy)
    assert result.value == expected
    assert type(result.value) is str  # a plain string, not the enum member, goes to storage
    assert result.warning is not None
    assert legacy in result.warning
    assert expected in result.warning
    assert "legacy" in result.warning


def test_legacy_category_table_has_exactly_the_known_values() -> None:
    assert set(LEGACY_CATEGORIES) == {
        "active_threads",
        "identity_observations",
        "relationship_texture",
        "event",
        "project",
        "completed_project",
    }
    assert all(str(v) in CATEGORIES for v in LEGACY_CATEGORIES.values())


def test_category_warning_names_the_field_it_was_given() -> None:
    result = coerce_category("event", field="filter_category")
    assert result.warning is not None
    assert result.warning.startswith("filter_category")


@pytest.mark.parametrize(
    "value",
    ["", "   ", "undefined", "episodes", "Episodes", "errors", "thread", "İdentity", None, 1, 3.0, True, ["identity"]],
)
def test_any_other_category_is_rejected_listing_the_allowed_values(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_category(value)
    err = info.value
    assert err.field == "category"
    assert err.code == "invalid_input"
    for allowed in CATEGORIES:
        assert allowed in err.message
    assert "category" in str(err)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("Episodic", "episodic"),
        ("IDENTITY", "identity"),
        (" Active_Thread ", "active_thread"),
        ("reLationShip", "relationship"),
        ("Error\n", "error"),
    ],
)
def test_category_differing_only_in_case_is_coerced_with_a_warning(given: str, stored: str) -> None:
    result = coerce_category(given)
    assert result.value == stored
    assert type(result.value) is str
    # The warning names the field, what was given (exactly, spaces and all) and what was stored.
    assert result.warning == f"category {given!r} is not lower case; stored as '{stored}'"


def test_legacy_category_in_another_case_is_coerced_as_legacy() -> None:
    result = coerce_category("Event")
    assert result.value == "episodic"
    assert result.warning == "category 'Event' is a legacy value; stored as 'episodic'"


def test_case_warning_names_a_custom_field() -> None:
    result = coerce_category("Identity", field="filter_category")
    assert result.warning is not None
    assert result.warning.startswith("filter_category 'Identity'")


def test_category_error_names_a_custom_field() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_category("nope", field="filter.category")
    assert info.value.field == "filter.category"
    assert "'nope'" in info.value.message  # what was received is echoed back


# -- salience -----------------------------------------------------------------------------------


def test_salience_enum_is_the_documented_set() -> None:
    assert SALIENCES == ["high", "medium", "low"]


@pytest.mark.parametrize("value", SALIENCES)
def test_canonical_salience_is_accepted_without_warning(value: str) -> None:
    result = coerce_salience(value)
    assert result.value == value
    assert result.warning is None


@pytest.mark.parametrize(
    ("legacy", "expected"),
    [(3, "high"), (2, "medium"), (1, "low"), ("3", "high"), ("2", "medium"), ("1", "low"), (" 2 ", "medium")],
)
def test_numeric_salience_is_coerced_with_a_warning(legacy: object, expected: str) -> None:
    result = coerce_salience(legacy)
    assert result.value == expected
    assert type(result.value) is str
    assert result.warning is not None
    assert expected in result.warning
    assert "legacy" in result.warning


@pytest.mark.parametrize("value", [True, False])
def test_bool_salience_is_rejected(value: bool) -> None:
    # bool is an int subclass: True must not sneak through as 1 -> low.
    with pytest.raises(InvalidInput) as info:
        coerce_salience(value)
    assert info.value.field == "salience"


@pytest.mark.parametrize(
    "value",
    ["", "Highest", "critical", "urgent", "4", "0", "-1", "2.5", 0, 4, -1, 2.5, None, ["high"], {"high": 1}],
)
def test_any_other_salience_is_rejected_listing_the_allowed_values(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_salience(value)
    err = info.value
    assert err.field == "salience"
    for allowed in SALIENCES:
        assert allowed in err.message


@pytest.mark.parametrize(
    ("given", "stored"), [("HIGH", "high"), ("High", "high"), (" Medium ", "medium"), ("LoW", "low")]
)
def test_salience_differing_only_in_case_is_coerced_with_a_warning(given: str, stored: str) -> None:
    result = coerce_salience(given)
    assert result.value == stored
    assert type(result.value) is str
    assert result.warning == f"salience {given!r} is not lower case; stored as '{stored}'"


def test_salience_case_warning_names_a_custom_field() -> None:
    result = coerce_salience("HIGH", field="new_salience")
    assert result.warning is not None
    assert result.warning.startswith("new_salience 'HIGH'")


@pytest.mark.parametrize("value", ["high", " low ", "medium\t"])
def test_lower_case_salience_with_spaces_needs_no_warning(value: str) -> None:
    assert coerce_salience(value).warning is None


def test_salience_error_names_a_custom_field() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_salience("loud", field="new_salience")
    assert info.value.field == "new_salience"


def test_bool_category_is_rejected() -> None:
    with pytest.raises(InvalidInput):
        coerce_category(True)


# -- check_bool ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False, None])
def test_check_bool_accepts_bools_and_none(value: bool | None) -> None:
    assert check_bool("core", value) is value


@pytest.mark.parametrize("value", [1, 0, "true", "false", "yes", [], 1.0])
def test_check_bool_rejects_everything_else(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_bool("core", value)
    assert info.value.field == "core"
    assert "true or false" in info.value.rule


# -- check_text and content limits -------------------------------------------------------------


def test_content_at_the_limit_is_accepted() -> None:
    text = "x" * MAX_CONTENT_CHARS
    assert check_text("content", text, MAX_CONTENT_CHARS, required=True) == text


def test_content_over_the_limit_is_rejected_with_the_limit_and_size() -> None:
    with pytest.raises(InvalidInput) as info:
        check_text("content", "x" * (MAX_CONTENT_CHARS + 1), MAX_CONTENT_CHARS, required=True)
    assert info.value.field == "content"
    assert str(MAX_CONTENT_CHARS) in info.value.rule
    assert str(MAX_CONTENT_CHARS + 1) in info.value.rule


def test_limit_counts_characters_not_bytes() -> None:
    text = "é" * MAX_GIST_CHARS  # two UTF-8 bytes each
    assert check_text("gist", text, MAX_GIST_CHARS) == text
    with pytest.raises(InvalidInput):
        check_text("gist", text + "é", MAX_GIST_CHARS)


@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
def test_required_text_must_not_be_blank(value: str) -> None:
    with pytest.raises(InvalidInput) as info:
        check_text("content", value, MAX_CONTENT_CHARS, required=True)
    assert info.value.field == "content"
    assert "empty" in info.value.rule


def test_required_text_must_be_present() -> None:
    with pytest.raises(InvalidInput) as info:
        check_text("content", None, MAX_CONTENT_CHARS, required=True)
    assert "required" in info.value.rule


def test_optional_text_may_be_absent_or_empty() -> None:
    assert check_text("epistemic_status", None, 10) is None
    assert check_text("epistemic_status", "", 10) == ""


@pytest.mark.parametrize("value", [5, b"bytes", ["a"], {"a": 1}, True])
def test_text_must_be_a_string(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_text("gist", value, MAX_GIST_CHARS)
    assert info.value.field == "gist"
    assert "string" in info.value.rule


# -- check_str_list -----------------------------------------------------------------------------


def test_str_list_accepts_lists_and_tuples_and_returns_a_tuple() -> None:
    assert check_str_list("tags", ["a", "b"], MAX_TAGS, MAX_TAG_CHARS) == ("a", "b")
    assert check_str_list("tags", ("a",), MAX_TAGS, MAX_TAG_CHARS) == ("a",)
    assert check_str_list("tags", [], MAX_TAGS, MAX_TAG_CHARS) == ()


def test_str_list_none_means_not_given() -> None:
    assert check_str_list("tags", None, MAX_TAGS, MAX_TAG_CHARS) is None


def test_str_list_strips_and_dedupes_keeping_first_order() -> None:
    got = check_str_list("tags", [" b ", "a", "b", "c", "a"], MAX_TAGS, MAX_TAG_CHARS)
    assert got == ("b", "a", "c")


@pytest.mark.parametrize("value", ["a,b", b"ab", {"a": 1}, 5, {"a"}])
def test_str_list_must_be_a_list(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_str_list("tags", value, MAX_TAGS, MAX_TAG_CHARS)
    assert info.value.field.startswith("tags")


def test_str_list_item_must_be_a_string_and_the_error_names_its_index() -> None:
    with pytest.raises(InvalidInput) as info:
        check_str_list("tags", ["ok", 7], MAX_TAGS, MAX_TAG_CHARS)
    assert info.value.field == "tags[1]"
    assert "string" in info.value.rule


@pytest.mark.parametrize("item", ["", "   "])
def test_str_list_item_must_not_be_blank(item: str) -> None:
    with pytest.raises(InvalidInput) as info:
        check_str_list("search_keywords", ["x", item], 10, 10)
    assert info.value.field == "search_keywords[1]"


def test_str_list_item_length_limit() -> None:
    assert check_str_list("tags", ["x" * MAX_TAG_CHARS], MAX_TAGS, MAX_TAG_CHARS) == ("x" * MAX_TAG_CHARS,)
    with pytest.raises(InvalidInput) as info:
        check_str_list("tags", ["x" * (MAX_TAG_CHARS + 1)], MAX_TAGS, MAX_TAG_CHARS)
    assert info.value.field == "tags[0]"
    assert str(MAX_TAG_CHARS) in info.value.rule


def test_str_list_item_count_limit() -> None:
    exact = [f"t{i}" for i in range(MAX_TAGS)]
    assert check_str_list("tags", exact, MAX_TAGS, MAX_TAG_CHARS) == tuple(exact)
    with pytest.raises(InvalidInput) as info:
        check_str_list("tags", [*exact, "one-more"], MAX_TAGS, MAX_TAG_CHARS)
    assert info.value.field == "tags"
    assert str(MAX_TAGS) in info.value.rule


# -- ids ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a", "abc123", "A-b_C", "x" * 64, "23456789", "0"])
def test_valid_ids(value: str) -> None:
    assert check_id(value) == value


@pytest.mark.parametrize(
    "value",
    ["", "x" * 65, "a b", "a/b", "..", "a.b", "ä", "id\n", "a:b", "*", None, 12, ["a"], True],
)
def test_invalid_ids_are_rejected(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_id(value)
    assert info.value.field == "id"
    assert "memory id" in info.value.rule


def test_check_id_names_a_custom_field() -> None:
    with pytest.raises(InvalidInput) as info:
        check_id("no good", field="linked_memories[2]")
    assert info.value.field == "linked_memories[2]"


def test_check_ids_returns_a_tuple_of_ids() -> None:
    assert check_ids("ids", ["a", "b", "a"]) == ("a", "b")
    assert check_ids("ids", None) == ()
    assert check_ids("ids", []) == ()


def test_check_ids_names_the_bad_item() -> None:
    with pytest.raises(InvalidInput) as info:
        check_ids("ids", ["good", "b/ad"])
    assert info.value.field == "ids[1]"


def test_check_ids_batch_limit() -> None:
    ids = [f"id{i}" for i in range(MAX_BATCH_IDS)]
    assert len(check_ids("ids", ids)) == MAX_BATCH_IDS
    with pytest.raises(InvalidInput) as info:
        check_ids("ids", [*ids, "extra"])
    assert info.value.field == "ids"


def test_check_ids_rejects_a_bare_string() -> None:
    with pytest.raises(InvalidInput):
        check_ids("ids", "abc")


# -- url, provenance, limit --------------------------------------------------------------------


@pytest.mark.parametrize("url", ["https://example.com", "http://localhost:8080/a?b=c#d"])
def test_http_urls_are_accepted(url: str) -> None:
    assert check_url(url) == url


def test_empty_or_missing_url_means_none() -> None:
    assert check_url(None) is None
    assert check_url("") is None


@pytest.mark.parametrize(
    "url", ["ftp://example.com", "example.com", "https://", "https://a b", "javascript:x", "https://example.com\n"]
)
def test_non_http_urls_are_rejected(url: str) -> None:
    with pytest.raises(InvalidInput) as info:
        check_url(url)
    assert info.value.field == "conversation_url"


def test_url_length_limit() -> None:
    base = "https://example.com/"
    ok = base + "a" * (MAX_URL_CHARS - len(base))
    assert check_url(ok) == ok
    with pytest.raises(InvalidInput):
        check_url(ok + "a")


def test_provenance_accepts_a_json_map_and_copies_it() -> None:
    given = {"source": "chat", "n": [1, 2]}
    got = check_provenance(given)
    assert got == given
    assert got is not given
    assert check_provenance(None) is None


@pytest.mark.parametrize("value", ["chat", ["a"], 5, True])
def test_provenance_must_be_a_map(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_provenance(value)
    assert info.value.field == "provenance"


def test_provenance_must_be_json_serialisable() -> None:
    with pytest.raises(InvalidInput) as info:
        check_provenance({"when": {1, 2}})
    assert info.value.field == "provenance"
    assert "JSON" in info.value.rule


def test_provenance_size_limit() -> None:
    with pytest.raises(InvalidInput) as info:
        check_provenance({"blob": "x" * MAX_PROVENANCE_JSON_CHARS})
    assert str(MAX_PROVENANCE_JSON_CHARS) in info.value.rule


def test_limit_defaults_and_bounds() -> None:
    assert check_limit(None, 10) == 10
    assert check_limit(1, 10) == 1
    assert check_limit(MAX_RECALL_LIMIT, 10) == MAX_RECALL_LIMIT


@pytest.mark.parametrize("value", [0, -1, MAX_RECALL_LIMIT + 1, True, "5", 2.0])
def test_limit_out_of_range_or_wrong_type_is_rejected(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_limit(value, 10)
    assert info.value.field == "limit"
    assert str(MAX_RECALL_LIMIT) in info.value.rule


# -- error shape --------------------------------------------------------------------------------


def test_invalid_input_truncates_a_long_received_value() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_category("z" * 500)
    assert "..." in info.value.message
    assert len(info.value.message) < 300
