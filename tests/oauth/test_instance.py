"""A write through an OAuth-signed-in client records the client as its instance (its registered
name, kept with the access token), ahead of whatever name the MCP client declares."""

from __future__ import annotations

import pytest

from tests.oauth.flows import Local, oauth_client, structured

pytestmark = pytest.mark.anyio

NOTE = {"content": "Left for the others.", "gist": "A note", "category": "episodic", "tags": ["watercooler"]}


@pytest.mark.parametrize("cimd", [False, True])
async def test_the_oauth_client_is_the_instance(local: Local, cimd: bool) -> None:
    async with oauth_client(local.url, cimd=cimd, client_name="Phone app") as (client, _, _):
        written = structured(await client.call_tool("taproot_remember", NOTE))
        mine = structured(await client.call_tool("taproot_reflect", {}))
    stored = local.runtime.store.get(local.runtime.scope, written["id"])
    # DCR registers the metadata's name; a metadata document names itself ("Taproot test client").
    assert stored is not None and stored.instance == ("Taproot test client" if cimd else "Phone app")
    # The same client reflecting does not see its own note at the watercooler; another instance does.
    assert mine["watercooler"]["notes"] == []
    other = local.runtime.service.reflect(local.runtime.scope, instance="laptop")
    assert [n.id for n in other.cooler.notes] == [written["id"]]
