"""Queues, dead-letter queues and functions of the ingestion chain, the API, deletion and
audit; each function gets only the actions and resources it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as notifications
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.search import Search
from stacks.storage import Storage

if TYPE_CHECKING:
    from stacks.citewell import StackConfig

MAX_RECEIVES = 5  # a message that fails this often goes to the dead-letter queue


class Functions(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, storage: Storage, search: Search,
                 layer: lambda_.ILayerVersion, config: StackConfig) -> None:
        super().__init__(scope, construct_id)
        from stacks.citewell import ROOT

        stack = cdk.Stack.of(self)
        self.all: list[lambda_.Function] = []
        self.dead_letter_queues: list[sqs.Queue] = []
        environment = {
            "CITEWELL_BUCKET": storage.bucket.bucket_name,
            "CITEWELL_TABLE": storage.table.table_name,
            "CITEWELL_OPENSEARCH_HOST": search.endpoint,
            "CITEWELL_OPENSEARCH_SERVERLESS": "true" if search.serverless else "false",
            "CITEWELL_EMBEDDER": "bedrock",
            "CITEWELL_TENANT_CLAIM": config.tenant_claim,
            "CITEWELL_ROLES_CLAIM": config.roles_claim,
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        bedrock_model = f"arn:aws:bedrock:{stack.region}::foundation-model/{config.embedding_model}"

        def function(name: str, timeout: int, memory: int) -> lambda_.Function:
            fn = lambda_.Function(
                self, name.capitalize(),
                runtime=lambda_.Runtime.PYTHON_3_12,
                architecture=lambda_.Architecture.X86_64,
                handler="app.lambda_handler",
                code=lambda_.Code.from_asset(str(ROOT / "functions" / name)),
                layers=[layer],
                timeout=cdk.Duration.seconds(timeout),
                memory_size=memory,
                environment={**environment, "POWERTOOLS_SERVICE_NAME": f"citewell-{name}"},
                tracing=lambda_.Tracing.ACTIVE,
            )
            self.all.append(fn)
            return fn

        def queue(name: str, timeout: int) -> sqs.Queue:
            dead = sqs.Queue(self, f"{name.capitalize()}Dlq", encryption=sqs.QueueEncryption.SQS_MANAGED,
                             retention_period=cdk.Duration.days(14), enforce_ssl=True)
            self.dead_letter_queues.append(dead)
            return sqs.Queue(
                self, f"{name.capitalize()}Queue", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                visibility_timeout=cdk.Duration.seconds(timeout * 6),
                dead_letter_queue=sqs.DeadLetterQueue(queue=dead, max_receive_count=MAX_RECEIVES),
            )

        bucket, table = storage.bucket, storage.table
        # stage: (input prefix, output prefix, timeout s, memory MB)
        stages = {
            "parse": ("raw/", "parsed/", 300, 2048),
            "chunk": ("parsed/", "chunks/", 300, 1024),
            "embed": ("chunks/", "embedded/", 900, 1024),
            "publish": ("embedded/", None, 300, 1024),
        }
        self.stages: dict[str, lambda_.Function] = {}
        for name, (source, output, timeout, memory) in stages.items():
            fn = function(name, timeout, memory)
            inbox = queue(name, timeout)
            bucket.add_event_notification(s3.EventType.OBJECT_CREATED, notifications.SqsDestination(inbox),
                                          s3.NotificationKeyFilter(prefix=source))
            fn.add_event_source(sources.SqsEventSource(inbox, batch_size=5, report_batch_item_failures=True))
            bucket.grant_read(fn, f"{source}*")
            if output:
                bucket.grant_put(fn, f"{output}*")
            table.grant_read_write_data(fn)
            self.stages[name] = fn
        self.stages["embed"].add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[bedrock_model]))
        bucket.grant_delete(self.stages["publish"], "embedded/*")
        for name in ("publish",):
            search.grant(self.stages[name].role)  # type: ignore[arg-type]

        # Removing an upload from the bucket deletes the document everywhere.
        self.delete = function("delete", 300, 1024)
        removals = queue("delete", 300)
        bucket.add_event_notification(s3.EventType.OBJECT_REMOVED, notifications.SqsDestination(removals),
                                      s3.NotificationKeyFilter(prefix="raw/"))
        self.delete.add_event_source(sources.SqsEventSource(removals, batch_size=5, report_batch_item_failures=True))

        self.api = function("api", 30, 1024)
        self.api.add_to_role_policy(iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=[bedrock_model, f"arn:aws:bedrock:{stack.region}::foundation-model/*"],
        ))
        bucket.grant_put(self.api, "raw/*")  # the presigned upload URL is signed with this role

        self.audit = function("audit", 900, 1024)
        events.Rule(self, "AuditSchedule", schedule=events.Schedule.rate(cdk.Duration.hours(6)),
                    targets=[targets.LambdaFunction(self.audit)])

        for fn in (self.delete, self.api, self.audit):
            table.grant_read_write_data(fn)
            search.grant(fn.role)  # type: ignore[arg-type]
        for fn in (self.delete, self.audit):
            bucket.grant_read(fn)
            bucket.grant_delete(fn)
            fn.add_to_role_policy(iam.PolicyStatement(
                actions=["s3:ListBucketVersions", "s3:DeleteObjectVersion"],
                resources=[bucket.bucket_arn, bucket.arn_for_objects("*")],
            ))
        self.audit.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[bedrock_model]))
        bucket.grant_put(self.audit)  # repairs re-run stages, which write artifacts
        bucket.grant_read(self.api, "raw/*")
        bucket.grant_delete(self.api)
        self.api.add_to_role_policy(iam.PolicyStatement(
            actions=["s3:ListBucketVersions", "s3:DeleteObjectVersion"],
            resources=[bucket.bucket_arn, bucket.arn_for_objects("*")],
        ))
