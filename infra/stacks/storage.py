"""The bucket of uploads and artifacts, and the metadata table."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, noncurrent_version_days: int) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self, "Documents",
            encryption=s3.BucketEncryption.S3_MANAGED,
            versioned=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
            lifecycle_rules=[
                # Our deletes remove every version; this bounds what anything else leaves behind
                # (an overwrite, a delete marker from outside citewell, an unfinished multipart upload).
                s3.LifecycleRule(id="noncurrent-versions",
                                 noncurrent_version_expiration=cdk.Duration.days(noncurrent_version_days),
                                 expired_object_delete_marker=True),
                s3.LifecycleRule(id="unfinished-uploads", abort_incomplete_multipart_upload_after=cdk.Duration.days(1)),
            ],
        )
        self.table = dynamodb.Table(
            self, "Metadata",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            time_to_live_attribute="expires_at",
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
