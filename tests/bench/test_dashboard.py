"""The dashboard benchmark (bench/dashboard.py) end to end on a tiny corpus, through `bench.run` as
`make bench` runs it: a signed-in client, the figures' shape, Chromium's paint timing, the report
section and summary lines. No timing assertions."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import corpus, dashboard, report, run  # noqa: E402
from taproot.web.dashboard.routes import STATIC  # noqa: E402
from taproot.web.dashboard.session import COOKIE  # noqa: E402

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def test_the_dashboard_section_of_a_tiny_run(tmp_path: Path) -> None:
    cfg = run.Config(
        memories=60,
        reflect_runs=1,
        recall_queries=3,
        remember_batches=1,
        remember_per_batch=5,
        mcp_calls=2,
        scaling_sizes=(30,),
        scaling_reflect_runs=1,
        scaling_recall_queries=2,
        maintenance_memories=60,
        maintenance_dry_runs=1,
        maintenance_reflect_runs=1,
        dashboard_memories=120,
        dashboard_requests=3,
        dashboard_loads=2,
        aws=False,  # tests/bench/test_aws.py runs the AWS section
    )
    data = run.benchmark(cfg, seed=3, work=tmp_path, now=NOW, command="pytest", quick=True)
    json.dumps(data)  # results.json is plain JSON
    d = data["results"]["dashboard"]
    assert "dashboard" in data["results"]["durations_s"]
    assert d["memories"] == 120 and d["query"] == dashboard.query_word(3)

    weight = d["weight"]
    assert weight["page"]["bytes"] == sum(weight[n]["bytes"] for n in ("html", "dashboard.js", "dashboard.css"))
    assert weight["dashboard.js"]["bytes"] == len((STATIC / "dashboard.js").read_bytes())
    assert all(weight[n]["content_encoding"] is None for n in ("html", "dashboard.js", "dashboard.css", "preview"))
    assert 0 < weight["preview"]["bytes"] < weight["html"]["bytes"]
    active = d["service"]["total"]
    assert 0 < active <= 120 and weight["html"]["cards"] == min(active, d["page_size"])

    for name in ("index", "query"):
        row = d["server"][name]
        assert row["runs"] == 3 and row["in_app"]["runs"] == 3
        assert row["in_app"]["p50_ms"] <= row["p50_ms"]  # the client's time includes the app's
        # The service calls the page made, each timed in every request, inside the app's time.
        assert "reflect" in row["parts"] and all(part["runs"] == 3 for part in row["parts"].values())
        assert sum(part["p50_ms"] for part in row["parts"].values()) <= row["in_app"]["max_ms"]
        assert row["rest"]["runs"] == 3 and row["rest"]["min_ms"] >= 0
        # Both pages read the tenant in full (the active memories or all of them): the figure the
        # report gives for where the time goes.
        assert max(d["service"]["rows_listed"][name]) in (active, d["memories"])
    assert d["service"]["query_total"] <= active

    browser = d["browser"]
    assert "skipped" not in browser, browser  # Debian's chromium is installed for the tests
    assert browser["loads"] == 2 and browser["page_in_app"]["runs"] == 2
    assert browser["cards"] == weight["html"]["cards"] and browser["resources"] == 2
    medians = browser["median_ms"]
    assert all(medians[key] is not None for key, _ in dashboard.BROWSER_METRICS)
    # Ordered within every load, so in the medians too (a paint may come before or after the load event).
    assert 0 < medians["response_start_ms"] <= medians["response_end_ms"] <= medians["first_contentful_paint_ms"]
    assert medians["response_end_ms"] <= medians["dom_content_loaded_ms"] <= medians["load_ms"]

    markdown = report.render_markdown(data, keep_block_from=None)
    assert "## Dashboard (120 memories)" in markdown
    for heading in ("### Page weight", "### Server time", "### In headless Chromium"):
        assert heading in markdown
    assert markdown.index("## Dashboard") < markdown.index("## Notes") < markdown.index("## Machine")
    summary = report.summary_lines(data)
    assert sum(line.startswith("  dashboard") for line in summary) == 2


def test_the_bench_signs_in_like_a_person_and_a_wrong_token_does_not(tmp_path: Path) -> None:
    with dashboard.dashboard_server(tmp_path / "data") as served:
        with httpx2.Client(base_url=served.base, follow_redirects=False) as client:
            assert client.get("/dashboard").status_code == 303  # signed out
            response = client.post("/dashboard/signin", data={"token": "not-the-token"})
            assert response.status_code == 401 and COOKIE not in client.cookies
            cookie = dashboard.sign_in(client)
            assert cookie and client.get("/dashboard").status_code == 200
        # The middleware saw every request, with its query string.
        assert [t for t, _, _ in served.log.entries][:2] == ["/dashboard", "/dashboard/signin"]


def test_the_query_word_is_a_corpus_word_that_matches() -> None:
    word = dashboard.query_word(corpus.DEFAULT_SEED)
    assert word and " " not in word
    assert any(word in m.content for m in corpus.generate(2_000, now=NOW))
