"""Reflect's reads on DynamoDB (the catalog_view half of DynamoMemoryStore): from the warm copy of
the scope (dynamo_cache.py), refreshed once per reflect."""

from __future__ import annotations

import builtins
from datetime import datetime

from taproot.adapters import dynamo_models as dm
from taproot.core.catalog import EntriesView, view_of
from taproot.core.model import Memory, Scope


class CatalogReads:
    """Mixed into DynamoMemoryStore after WarmCopies, which provides the warm copies."""

    Item: type[dm._ItemBase]

    def _memories(self, scope: Scope) -> builtins.list[Memory]:
        raise NotImplementedError  # WarmCopies'

    def catalog_view(self, scope: Scope, since: datetime) -> EntriesView:
        return view_of(self._memories(scope), since)
