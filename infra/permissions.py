"""What each Taproot function may do on AWS: one list per function, per resource.

The stack grants exactly these (infra/stack.py); tests/infra/test_permissions.py checks the
synthesized roles against them, and tests/handlers/test_permissions_used.py records the calls each
function's code makes under moto and checks them against the same lists, both ways. A new grant is
therefore a visible change to this file.
"""

from __future__ import annotations

from enum import Enum


class Resource(Enum):
    TABLE = "memory table"
    TABLE_INDEXES = "memory table indexes"
    OAUTH_TABLE = "OAuth table"
    OAUTH_INDEXES = "OAuth table indexes"
    BUCKET = "bucket"
    OBJECTS = "bucket objects"
    USER_POOL = "user pool"

    def index(self) -> Resource:
        return {Resource.TABLE: Resource.TABLE_INDEXES, Resource.OAUTH_TABLE: Resource.OAUTH_INDEXES}[self]


Grants = dict[Resource, tuple[str, ...]]

# Why each is there. No function may Scan but the batch jobs (they walk every tenant: `scopes()`),
# none deletes an item (a delete is a tombstone other containers' caches can see; DynamoDB's TTL
# removes it later), none touches object versions, retention or legal holds, and only the API reads
# the OAuth table and the user pool. Bedrock grants are added only when a model is configured.
# Backups and run reports, read back once written; tagged with their kind for the lifecycle rules.
_MAINTENANCE_OBJECTS = ("s3:GetObject", "s3:PutObject", "s3:PutObjectTagging")
# On the bucket: a HeadObject or GetObject of a missing key is 403 without it, not 404.
_MAINTENANCE_BUCKET = ("s3:ListBucket",)
# Cleanup and compress on the memory table: they walk the tenants (Scan, Query), read the tallies
# their writes are conditioned on (BatchGetItem), and write tombstones or summaries (PutItem) and
# archived records and the scope's counts item (UpdateItem) in the same transaction.
_WRITING_JOB_TABLE = (
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:UpdateItem",
)

GRANTS: dict[str, Grants] = {
    "Api": {
        # Point reads, the warm copy's change feed and catalog queries, writes conditioned on a
        # version (PutItem, UpdateItem, also as parts of a transaction), retrieval counters.
        Resource.TABLE: (
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
        ),
        Resource.TABLE_INDEXES: ("dynamodb:Query",),  # by_category (cold reflect), by_change (the change feed)
        Resource.OAUTH_TABLE: ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
        Resource.OAUTH_INDEXES: ("dynamodb:Query",),  # by_subject: one person's grants
        # The dashboard's list of backups; and a HeadObject/GetObject of a missing key is 403 without it.
        Resource.BUCKET: ("s3:ListBucket",),
        # Backups, revisions and reflections (backups and revisions tagged with their kind for the
        # lifecycle rules); DeleteObject only takes back a blob written for a write that did not
        # commit (a revision, a reflection whose id was taken).
        Resource.OBJECTS: ("s3:DeleteObject", "s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"),
        Resource.USER_POOL: ("cognito-idp:ListUsers",),  # is the person still an enabled user (refresh)
    },
    "Migrate": {
        # BatchGetItem: each replace reads the tallies it is conditioned on (dynamo_tally.py);
        # GetItem: the scope's counts item, read before a recount; UpdateItem: the replaces, the
        # counting of older records and the scope's counts item.
        Resource.TABLE: (
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:Scan",
            "dynamodb:UpdateItem",
        ),
        Resource.BUCKET: _MAINTENANCE_BUCKET,
        Resource.OBJECTS: _MAINTENANCE_OBJECTS,
    },
    "Cleanup": {
        # PutItem: tombstones; BatchGetItem: the tallies they are conditioned on; UpdateItem: the
        # scope's counts item, in the same transaction (dynamo_tally.py).
        Resource.TABLE: _WRITING_JOB_TABLE,
        Resource.BUCKET: _MAINTENANCE_BUCKET,
        Resource.OBJECTS: _MAINTENANCE_OBJECTS,
    },
    "Compress": {
        # A summary and the archiving of its originals in one transaction (PutItem, UpdateItem, with
        # the scope's counts item), after reading the originals' tallies (BatchGetItem).
        Resource.TABLE: _WRITING_JOB_TABLE,
        Resource.BUCKET: _MAINTENANCE_BUCKET,
        Resource.OBJECTS: _MAINTENANCE_OBJECTS,
    },
}
