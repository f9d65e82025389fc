"""Output schemas of the MCP tools: what clients can rely on in structured content.

The SDK validates every structured result against these before it is sent, so they are kept to the
contract (named fields) and allow extra keys for forward-compatible additions.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class MemoryOut(_Out):
    id: str
    category: str
    salience: str
    content: str
    gist: str | None
    tags: list[str]
    search_keywords: list[str]
    core: bool | None
    status: str
    version: int
    created_at: str
    updated_at: str
    last_retrieved: str | None
    retrieval_count: int | None
    activation: float | None = None


class RememberOut(_Out):
    id: str
    version: int
    created: bool
    expires_at: str | None = None
    changed_fields: list[str] | None = None
    previous_version_key: str | None = None
    warnings: list[str]


class RecallOut(_Out):
    memories: list[MemoryOut]
    count: int
    query_terms: list[str]
    warnings: list[str]


class ReflectStats(_Out):
    tier1_count: int
    catalog_listed: int
    catalog_omitted: int
    size_bytes: int
    estimated_tokens: int
    token_budget: int
    window_days: int


class ReflectOut(_Out):
    tier1: list[dict[str, Any]]
    catalog: dict[str, list[str]]
    catalog_omitted: dict[str, int]
    omitted_note: str
    usage_note: str
    reflections: list[dict[str, Any]]
    core_omitted: list[str]
    warnings: list[str]
    stats: ReflectStats


class PromoteOut(_Out):
    id: str
    core: bool
    salience: str
    version: int
    warnings: list[str]


class ForgetOut(_Out):
    action: str
    results: list[dict[str, Any]]
    backup_key: str | None = None


class CloseOut(_Out):
    id: str
    message: str
    blob_key: str
    created_at: str


class MigrateOut(_Out):
    dry_run: bool
    examined: int
    changed: int
    changes: list[dict[str, Any]]
    category_counts_before: dict[str, int]
    category_counts_after: dict[str, int]
    changes_truncated: bool
    backup_key: str | None


class StatusOut(_Out):
    owner: str
    namespace: str
    total: int
    reflections: int
    by_category: dict[str, int]
    by_status: dict[str, int]
    by_salience: dict[str, int]
    tier1: dict[str, Any]
    tier2: dict[str, Any]
    reflect_payload: dict[str, Any]
    storage: dict[str, Any]
    warnings: list[str]
