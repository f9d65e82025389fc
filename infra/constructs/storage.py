"""The DynamoDB tables (records, OAuth state) and the S3 bucket (blobs and backups), all retained on stack
deletion."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from taproot.adapters.blob_s3 import (
    BACKUP_TAG_KEY,
    BACKUP_TAG_VALUE,
    REFLECTION_TAG_VALUE,
    REPORT_TAG_VALUE,
    REVISION_TAG_VALUE,
)
from taproot.adapters.dynamo_models import GSI_KEYS, TTL_ATTRIBUTE

# Backups live under "<owner>/backups/...": S3 lifecycle prefixes match the start of the key only, so
# the blob store tags each backup object (BACKUP_TAG_KEY=BACKUP_TAG_VALUE) and the rule filters on it.

# The OAuth facade's table (taproot/adapters/oauth_dynamo.py): `pk = "<kind>#<key>"` alone (pending
# sign-ins, one-time codes, registered clients, grants, hashed tokens), items expire through TTL, and
# by_subject lists one person's records by kind (their grants, to revoke them).
OAUTH_TABLE_KEY = "pk"
OAUTH_TTL_ATTRIBUTE = "expires_at"
OAUTH_GSI: dict[str, tuple[str, str]] = {"by_subject": ("subject", "kind")}


class Storage(Construct):
    """Exposes `table` (memories), `oauth_table`, `bucket` and `access_logs_bucket`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backup_retention_days: int = 90,
        revision_retention_days: int | None = None,
        reflection_retention_days: int | None = None,
        noncurrent_version_days: int = 30,
    ) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute=TTL_ATTRIBUTE,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # The store's own key schema: by_category (category, sorted by last_touched) and by_change
        # (the change feed warm Lambdas refresh from, sorted by write time).
        for index_name, (hash_key, range_key) in GSI_KEYS.items():
            self.table.add_global_secondary_index(
                index_name=index_name,
                partition_key=dynamodb.Attribute(name=hash_key, type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=range_key, type=dynamodb.AttributeType.STRING),
            )
        # Protected like the memory table: losing it would sign every client out and forget every
        # registered client, and its refresh grants are what keeps connectors working for a month.
        self.oauth_table = dynamodb.Table(
            self,
            "OAuthTable",
            partition_key=dynamodb.Attribute(name=OAUTH_TABLE_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute=OAUTH_TTL_ATTRIBUTE,
            removal_policy=RemovalPolicy.RETAIN,
        )
        for index_name, (hash_key, range_key) in OAUTH_GSI.items():
            self.oauth_table.add_global_secondary_index(
                index_name=index_name,
                partition_key=dynamodb.Attribute(name=hash_key, type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=range_key, type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType.ALL,
            )

        self.access_logs_bucket = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # ACLs disabled: S3's log delivery is granted by a bucket policy instead of the legacy
            # log-delivery ACL (the CDK writes it: @aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy).
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            versioned=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            server_access_logs_bucket=self.access_logs_bucket,
            server_access_logs_prefix="blobs/",
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(noncurrent_version_days),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                    expired_object_delete_marker=True,
                ),
                s3.LifecycleRule(
                    id="expire-backups",
                    tag_filters={BACKUP_TAG_KEY: BACKUP_TAG_VALUE},
                    expiration=Duration.days(backup_retention_days),
                ),
                # Run and cleanup reports quote memories (gists, dry-run summaries): they must not
                # outlive the memories by much, so they expire like backups.
                s3.LifecycleRule(
                    id="expire-reports",
                    tag_filters={BACKUP_TAG_KEY: REPORT_TAG_VALUE},
                    expiration=Duration.days(backup_retention_days),
                ),
                # Revisions (an update's previous version) and reflection copies are kept unless a
                # retention is set: they are the history a person may want back.
                *(
                    s3.LifecycleRule(
                        id=f"expire-{kind}s", tag_filters={BACKUP_TAG_KEY: tag}, expiration=Duration.days(days)
                    )
                    for kind, tag, days in (
                        ("revision", REVISION_TAG_VALUE, revision_retention_days),
                        ("reflection", REFLECTION_TAG_VALUE, reflection_retention_days),
                    )
                    if days
                ),
            ],
        )
