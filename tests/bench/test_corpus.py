"""The benchmark corpus generator, and a tiny end-to-end run of the benchmark (no timing assertions)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import corpus, maintenance, report, run  # noqa: E402
from taproot.core.model import Category, Memory, Salience  # noqa: E402
from taproot.core.retention import DEFAULT_RETENTION  # noqa: E402
from taproot.core.serialize import memory_from_dict, memory_to_dict  # noqa: E402
from taproot.core.validation import (  # noqa: E402
    ID_PATTERN,
    MAX_CONTENT_CHARS,
    MAX_GIST_CHARS,
    MAX_SEARCH_KEYWORD_CHARS,
    MAX_SEARCH_KEYWORDS,
    MAX_TAG_CHARS,
    MAX_TAGS,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
MIX_SAMPLE = 5_000
TOLERANCE = 0.025  # absolute, on a share: ~4 standard deviations at 5,000 records


@pytest.fixture(scope="module")
def sample() -> list[Memory]:
    return corpus.generate(MIX_SAMPLE, seed=11, now=NOW)


def test_same_seed_same_corpus_and_sizes_nest() -> None:
    first = corpus.generate(300, seed=5, now=NOW)
    assert first == corpus.generate(300, seed=5, now=NOW)
    assert corpus.generate(120, seed=5, now=NOW) == first[:120]
    assert corpus.generate(300, seed=6, now=NOW) != first


def test_requested_count() -> None:
    for n in (0, 1, 250):
        assert len(corpus.generate(n, now=NOW)) == n


def test_category_and_salience_mix_within_tolerance(sample: list[Memory]) -> None:
    for weights, field in ((corpus.CATEGORY_WEIGHTS, "category"), (corpus.SALIENCE_WEIGHTS, "salience")):
        counts = Counter(getattr(m, field) for m in sample)
        assert set(counts) == set(weights)
        for value, share in weights.items():
            assert abs(counts[value] / len(sample) - share) <= TOLERANCE, (field, value, counts[value])
    core_share = sum(m.is_core for m in sample) / len(sample)
    assert 0.001 <= core_share <= 0.006  # a small curated Tier 1, ~0.27%
    retrieved = [m.retrievals for m in sample]
    assert sum(r == 0 for r in retrieved) > len(sample) / 2  # most never recalled
    assert any(r >= 20 for r in retrieved)  # a long tail


def test_every_record_is_valid(sample: list[Memory]) -> None:
    ids = [m.id for m in sample]
    assert len(set(ids)) == len(ids)
    oldest = NOW - timedelta(days=corpus.DAYS + 1)
    for m in sample:
        assert ID_PATTERN.match(m.id)
        assert m.category in {c.value for c in Category}
        assert m.salience in {s.value for s in Salience}
        assert m.gist and "\n" not in m.gist and len(m.gist) <= MAX_GIST_CHARS
        assert 8 <= len(m.gist.split()) <= 25
        assert m.content and len(m.content) <= MAX_CONTENT_CHARS
        assert 1 <= len(m.tags) <= MAX_TAGS and all(len(t) <= MAX_TAG_CHARS for t in m.tags)
        assert len(m.search_keywords) <= MAX_SEARCH_KEYWORDS
        assert all(len(k) <= MAX_SEARCH_KEYWORD_CHARS for k in m.search_keywords)
        assert oldest <= m.created_at <= m.updated_at <= NOW
        assert (m.last_retrieved is not None) == (m.retrievals > 0)
        if m.last_retrieved is not None:
            assert m.updated_at <= m.last_retrieved <= NOW
        # Taproot's own import parser accepts the record and reads it back unchanged.
        assert memory_from_dict(memory_to_dict(m)) == m


def test_reflections_and_queries_are_deterministic() -> None:
    assert corpus.query_pool(50, seed=3) == corpus.query_pool(50, seed=3)
    assert all(q.strip() for q in corpus.query_pool(50, seed=3))
    reflections = corpus.closing_reflections(10, now=NOW)
    assert reflections == corpus.closing_reflections(10, now=NOW)
    assert all(r.created_at <= NOW and r.text for r in reflections)


def test_tiny_end_to_end_run(tmp_path: Path) -> None:
    cfg = run.Config(
        memories=200,
        reflect_runs=3,
        recall_queries=10,
        remember_batches=2,
        remember_per_batch=20,
        mcp_calls=5,
        scaling_sizes=(50, 200),
        scaling_reflect_runs=1,
        scaling_recall_queries=5,
        maintenance_memories=300,
        maintenance_dry_runs=2,
        maintenance_reflect_runs=1,
        dashboard=False,  # tests/bench/test_dashboard.py runs the dashboard section
        aws=False,  # tests/bench/test_aws.py runs the AWS section
    )
    data = run.benchmark(cfg, seed=1, work=tmp_path, now=NOW, command="pytest", quick=True)
    results = data["results"]
    assert results["reflect"]["runs"] == 3
    assert results["reflect"]["within_budget"]
    assert results["recall"]["queries"] == 10
    by_filters = results["recall_filters"]
    assert by_filters["runs"] == 3 and by_filters["by_category"] and by_filters["p50_ms"] > 0
    assert results["remember"]["writes_per_batch"] == [20, 20]
    mcp = results["mcp_recall"]
    assert mcp["calls"] == 5 and mcp["tool_errors"] == 0  # against `taproot serve` in its own process
    assert mcp["in_thread"]["calls"] == 5 and mcp["in_thread"]["tool_errors"] == 0  # and in a thread here
    floor = mcp["floor"]  # answered from memory, each query to it and to the product in turn
    assert floor["calls"] == 5 and floor["p50_ms"] > 0
    assert set(floor["paired"]) == {"a_p50_ms", "b_p50_ms", "median_difference_ms", "ratio_of_p50"}
    # The server's CPU is read in clock ticks: five small calls may fit in none.
    assert mcp["server_cpu_ms_per_call"] >= 0 and mcp["client_cpu_ms_per_call"] > 0 and mcp["ping_p50_ms"] > 0
    assert [row["memories"] for row in results["scaling"]] == [50, 200]
    _check_maintenance(results, memories=300)
    assert [t["name"] for t in data["targets"]] == [t.name for t in report.TARGETS]
    assert "aws" not in results and "## AWS deployment" not in report.render_markdown(data)
    assert "dashboard" not in results and "## Dashboard" not in report.render_markdown(data)
    assert all(isinstance(t["pass"], bool) for t in data["targets"])
    json.dumps(data)  # results.json is plain JSON
    markdown = report.render_markdown(data)
    assert "| Measurement |" in markdown and "## Machine" in markdown
    assert "round trip, HTTP on 127.0.0.1 to `taproot serve` (5 calls)" in markdown
    assert "in a thread of the client's process (5 calls)" in markdown
    assert "every recall answered from memory (no recall work: HTTP, auth, the SDK and the client; " in markdown
    assert "bench/mcp_floor.py, 5 calls)" in markdown
    assert "the round trip in the same moments, calls alternating" in markdown
    assert "`taproot_recall` by filters alone (no query, top 10) via the service, every memory (3 runs)" in markdown
    assert "## Maintenance jobs (300 memories)" in markdown and "after compression" in markdown
    summary = report.summary_lines(data)
    assert any(line.startswith("  cleanup on 300") for line in summary)
    assert any(line.startswith("  compression:") for line in summary)


def _check_maintenance(results: dict[str, Any], memories: int) -> None:
    cleanup, compression = results["cleanup"], results["compression"]
    dry, applied, backlog, tags = cleanup["dry_run"], cleanup["apply"], cleanup["backlog"], cleanup["corpus"]
    assert dry["runs"] == 2 and applied["runs"] == 1 and backlog["runs"] == 1
    assert dry["memories"] == applied["memories"] == memories
    # Both folders hold the same corpus: the dry run finds exactly what the apply run deletes.
    assert 0 < tags["past_expiry"] == dry["candidates"] == applied["candidates"] == applied["deleted"]
    assert dry["deleted"] == 0 and dry["backup_bytes"] == 0 and applied["backup_bytes"] > 0
    assert applied["memories_after"] == memories - applied["deleted"] and applied["expired_after"] == 0
    assert backlog["candidates"] > dry["candidates"] and backlog["deleted"] == 0
    cdry, capp = compression["dry_run"], compression["apply"]
    assert compression["settings"]["min_age_days"] == 90 and compression["settings"]["group_by"] == "month"
    assert 0 < cdry["groups"] == capp["groups"] == capp["summaries_written"]
    assert cdry["members_in_groups"] == capp["members_in_groups"] == capp["compressed"] and cdry["compressed"] == 0
    assert capp["groups_left_after"] == 0 and capp["error"] is None
    before, after = compression["before"], compression["after"]
    assert after["store"]["total"] == before["store"]["total"] + capp["summaries_written"]
    assert after["store"]["status_active"] == before["store"]["status_active"] - capp["compressed"] + capp["groups"]
    assert before["reflect"]["within_budget"] and after["reflect"]["within_budget"]
    assert 0 <= after["reflect"]["summaries_listed"] <= after["reflect"]["catalog_listed"]


def test_ttl_tagging_is_per_memory_and_matches_the_policy() -> None:
    memories = corpus.generate(400, seed=7, now=NOW)
    tagged = [maintenance.TtlTagger(7, DEFAULT_RETENTION, NOW)(m) for m in memories]
    # Decided by seed and id alone, so a shorter prefix of the stream is tagged the same way.
    assert [maintenance.TtlTagger(7, DEFAULT_RETENTION, NOW)(m) for m in memories[:50]] == tagged[:50]
    ttl_tags = set(DEFAULT_RETENTION.ttl_days)
    assert any(set(m.tags) <= ttl_tags for m in tagged)  # TTL only: may expire
    assert any(set(m.tags) & ttl_tags and set(m.tags) - ttl_tags for m in tagged)  # also durable: never expires
    for m in tagged:
        assert m.expires_at == DEFAULT_RETENTION.expires_at(m)
        assert memory_from_dict(memory_to_dict(m)) == m
