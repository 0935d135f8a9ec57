"""Queues, dead-letter queues and functions of the ingestion chain, the API, deletion and
audit. Each role is written out action by action, for the calls its function makes
(tests/aws/test_aws_iam.py replays them under the synthesized roles): no broad grants."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as notifications
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.config import MARKETPLACE_PRODUCTS, ROOT
from stacks.search import ALIAS, Search
from stacks.storage import Storage

if TYPE_CHECKING:
    from stacks.config import StackConfig

MAX_RECEIVES = 5  # a message that fails this often goes to the dead-letter queue
# object key prefixes: one per stage's output, and ocr/ (what a Textract job read of an upload)
STAGES = ("raw", "parsed", "chunks", "embedded", "ocr")
# What reading a scanned PDF or a multi-page TIFF asynchronously calls: StartDocumentTextDetection on
# the stored upload, GetDocumentTextDetection for its pages (parse reads a single image with DetectDocumentText).
JOBS = ["textract:StartDocumentTextDetection", "textract:GetDocumentTextDetection"]
# The record store: reads, compare-and-set writes and batch writes; nothing scans (the audit
# queries per tenant and per identity).
RECORDS = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
           "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"]
# What each ingestion stage does with records: read its upload and the document, compare-and-set
# the document (parse), record the object that used an upload's form on its intent (parse,
# UpdateItem), write chunk records (chunk), cache embeddings (embed), register a tenant or an
# embedder identity for the audit (PutItem), and drop what a superseded upload wrote: its chunk
# records and the cached vectors no other record uses, looked up in batches (BatchGetItem) and
# deleted in batches (BatchWriteItem), by any stage, parse too (a batch redelivered late).
STAGE_RECORDS = {
    "parse": ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
              "dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"],
    "chunk": ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem",
              "dynamodb:BatchWriteItem"],
    "embed": ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem",
              "dynamodb:BatchWriteItem"],
    "publish": RECORDS,
}
# The fetch function reads its upload and the document, writes the intent's validators, fails the
# document with a compare-and-set (PutItem) and removes a failed upload's intent.
FETCH_RECORDS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"]


class Functions(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, storage: Storage, search: Search,
                 layer: lambda_.ILayerVersion, config: StackConfig) -> None:
        super().__init__(scope, construct_id)

        stack = cdk.Stack.of(self)
        bucket, table = storage.bucket, storage.table
        self._bucket = bucket
        self.all: list[lambda_.Function] = []
        self.dead_letter_queues: list[sqs.Queue] = []
        self.inboxes: dict[str, tuple[sqs.Queue, int]] = {}  # each function's queue, with the function's timeout (s)
        environment = {
            "CITEWELL_BUCKET": bucket.bucket_name,
            "CITEWELL_TABLE": table.table_name,
            "CITEWELL_OPENSEARCH_HOST": search.endpoint,
            "CITEWELL_INDEX_ALIAS": ALIAS,
            "CITEWELL_EMBEDDER": config.embedder,
            "CITEWELL_TENANT_CLAIM": config.tenant_claim,
            "CITEWELL_ROLES_CLAIM": config.roles_claim,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_METRICS_NAMESPACE": "citewell",
        }
        if config.embedder == "bedrock":
            environment["CITEWELL_BEDROCK_EMBED_MODEL"] = config.embedding_model

        def function(name: str, timeout: int, memory: int, **extra: object) -> lambda_.Function:
            log_group = logs.LogGroup(self, f"{name.capitalize()}Logs", retention=retention(config.log_retention_days),
                                      removal_policy=cdk.RemovalPolicy.DESTROY)
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
                log_group=log_group,
                **extra,  # type: ignore[arg-type]
            )
            self.all.append(fn)
            return fn

        def queue(name: str, timeout: int) -> sqs.Queue:
            dead = sqs.Queue(self, f"{name.capitalize()}Dlq", encryption=sqs.QueueEncryption.SQS_MANAGED,
                             retention_period=cdk.Duration.days(14), enforce_ssl=True)
            self.dead_letter_queues.append(dead)
            inbox = sqs.Queue(
                self, f"{name.capitalize()}Queue", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                visibility_timeout=cdk.Duration.seconds(timeout * 6),
                dead_letter_queue=sqs.DeadLetterQueue(queue=dead, max_receive_count=MAX_RECEIVES),
            )
            self.inboxes[name] = (inbox, timeout)
            return inbox

        def fed(fn: lambda_.Function, name: str, inbox: sqs.Queue) -> None:
            """A queue feeds the function in small batches, at most ``max_concurrency`` at once:
            Bedrock and the domain see a bounded load, and a timeout resends only a small batch."""
            fn.add_event_source(sources.SqsEventSource(
                inbox, batch_size=config.batch_size[name], max_concurrency=config.max_concurrency[name],
                report_batch_item_failures=True))

        def allow(fn: lambda_.Function, actions: list[str], resources: list[str]) -> None:
            fn.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=resources))

        def objects(*prefixes: str) -> list[str]:
            return [bucket.arn_for_objects(f"{p}/*") for p in prefixes]

        def cleans_up(fn: lambda_.Function) -> None:
            """Removing an upload's objects: every version goes (ListBucketVersions, DeleteObjectVersion),
            and HeadObject, which tells whether there was one, needs s3:GetObject.

            S3 answers a read of a missing key with 404 only to a role allowed s3:ListBucket on the
            bucket, and with 403 to any other, which the object store rightly takes for a refusal.
            Whoever cleans up reads keys that may never have been written (a failed or superseded
            upload's artifacts), so it may list. S3 documents no s3:prefix for that check, so the
            grant is the bucket's, as ListBucketVersions (which names every key too) already is."""
            allow(fn, ["s3:GetObject", "s3:DeleteObjectVersion"], objects(*STAGES))
            allow(fn, ["s3:ListBucket", "s3:ListBucketVersions"], [bucket.bucket_arn])

        def records(fn: lambda_.Function, actions: list[str]) -> None:
            allow(fn, actions, [table.table_arn])

        # stage: (input prefix, output prefix, timeout s, memory MB)
        stages = {
            "parse": ("raw", "parsed", 300, 2048),
            "chunk": ("parsed", "chunks", 300, 1024),
            "embed": ("chunks", "embedded", 900, 1024),
            "publish": ("embedded", None, 300, 1024),
        }
        self.stages: dict[str, lambda_.Function] = {}
        for name, (source, output, timeout, memory) in stages.items():
            fn = function(name, timeout, memory)
            inbox = queue(name, timeout)
            bucket.add_event_notification(s3.EventType.OBJECT_CREATED, notifications.SqsDestination(inbox),
                                          s3.NotificationKeyFilter(prefix=f"{source}/"))
            fed(fn, name, inbox)
            if output:
                allow(fn, ["s3:PutObject"], objects(output))
            cleans_up(fn)  # a superseded upload removes what it wrote; reads of its inputs are GetObject
            records(fn, STAGE_RECORDS[name])
            self.stages[name] = fn
        # Parse reads the version of an upload's key it admitted, not a replay of the form written over it.
        allow(self.stages["parse"], ["s3:GetObjectVersion"], objects("raw"))
        search.grant_index(self.stages["publish"].role)  # type: ignore[arg-type]
        for name in ("parse", "chunk", "embed"):  # a superseded upload removes the index rows of its revision
            search.grant_purge(self.stages[name].role)  # type: ignore[arg-type]

        # A Textract job's completion runs parse again for its upload: a function of its own, fed one
        # completion at a time and given 15 minutes (reading a thousand pages' results is hundreds of
        # calls), with everything parse may do.
        self.ocr: lambda_.Function | None = None
        if config.ocr == "textract":
            self.ocr = function("ocr", 900, 2048)
            allow(self.ocr, ["s3:PutObject"], objects("parsed"))
            cleans_up(self.ocr)
            records(self.ocr, STAGE_RECORDS["parse"])
            allow(self.ocr, ["s3:GetObjectVersion"], objects("raw"))
            search.grant_purge(self.ocr.role)  # type: ignore[arg-type]
            self._ocr_inbox = queue("ocr", 900)
            fed(self.ocr, "ocr", self._ocr_inbox)

        # Removing an upload from the bucket deletes the document everywhere.
        self.delete = function("delete", 300, 1024)
        removals = queue("delete", 300)
        bucket.add_event_notification(s3.EventType.OBJECT_REMOVED, notifications.SqsDestination(removals),
                                      s3.NotificationKeyFilter(prefix="raw/"))
        fed(self.delete, "delete", removals)

        extra = {"reserved_concurrent_executions": config.api_reserved_concurrency} if config.api_reserved_concurrency else {}
        self.api = function("api", 30, 1024, **extra)
        allow(self.api, ["s3:PutObject"], objects("raw"))  # the presigned upload is signed with this role
        # An answer is recorded in one transaction with a check of each source's record.
        allow(self.api, ["dynamodb:ConditionCheckItem"], [table.table_arn])

        # A URL's upload: the API queues it, the fetch function brings the page into raw/ (whose
        # notification starts parse) through the SSRF guard; it reads the served copy on a 304.
        self.fetch = function("fetch", 120, 512)
        fetches = queue("fetch", 120)
        fed(self.fetch, "fetch", fetches)
        allow(self.fetch, ["s3:PutObject"], objects("raw"))
        # A failed fetch removes its upload's intent; it stored no object (a redelivery after the page
        # was stored is a no-op), so it lists versions and deletes none, and purges no revision.
        allow(self.fetch, ["s3:GetObject"], objects(*STAGES))
        allow(self.fetch, ["s3:ListBucket", "s3:ListBucketVersions"], [bucket.bucket_arn])
        records(self.fetch, FETCH_RECORDS)
        fetches.grant_send_messages(self.api)
        self.api.add_environment("CITEWELL_FETCH_QUEUE_URL", fetches.queue_url)
        if config.fetch_allow:
            self.fetch.add_environment("CITEWELL_FETCH_ALLOW", ",".join(config.fetch_allow))

        # The audit: the schedule's invocation asks the domain to expunge, plans the run and queues
        # its pages; the queue feeds them back to the same function, a page a call, a few at once.
        self.audit = function("audit", 900, 1024)
        events.Rule(self, "AuditSchedule", schedule=events.Schedule.rate(cdk.Duration.hours(6)),
                    targets=[targets.LambdaFunction(self.audit)])
        pages = queue("audit", 900)
        fed(self.audit, "audit", pages)
        pages.grant_send_messages(self.audit)
        self.audit.add_environment("CITEWELL_AUDIT_QUEUE_URL", pages.queue_url)

        for fn in (self.delete, self.api, self.audit):
            cleans_up(fn)
            records(fn, RECORDS)
            allow(fn, ["s3:ListBucketMultipartUploads"], [bucket.bucket_arn])
            allow(fn, ["s3:AbortMultipartUpload"], objects(*STAGES))  # an unfinished write of the document
        search.grant_query(self.delete.role)  # type: ignore[arg-type]
        search.grant_query(self.api.role)  # type: ignore[arg-type]
        search.grant_index(self.audit.role)  # type: ignore[arg-type]  # a repair re-publishes
        # A repair re-ingests a served upload whose chunk records are gone by copying its stored file to a
        # new upload's key in raw/, whose notification starts the chain (which runs every stage, scans by
        # a Textract job): the audit writes no stage's output itself. CopyObject is s3:PutObject on the
        # new key and s3:GetObject on the stored one; the condition holds the write to copies of what
        # raw/ already holds, so the audit never brings bytes of its own into raw/.
        self.audit.add_to_role_policy(iam.PolicyStatement(
            actions=["s3:PutObject"], resources=objects("raw"),
            conditions={"StringLike": {"s3:x-amz-copy-source": f"{bucket.bucket_name}/raw/*"}}))

        self._bedrock(config, stack)
        self._textract(config)

    def _textract(self, config: StackConfig) -> None:
        """Scans are read where uploads are parsed: the parse stage and the OCR function that resumes
        it (the audit's re-ingest hands its upload to the chain). Textract's actions take no resource-level permission,
        so the grants are the actions alone (the resource "*" is the only one IAM accepts for them).

        A scanned PDF or a multi-page TIFF is read by an asynchronous job (docs/aws.md, "Scans"):
        Textract reads the upload from S3 as the caller (parse's s3:GetObject and s3:GetObjectVersion on raw/), and
        publishes the job's completion to an SNS topic as a role it is passed (iam:PassRole, to
        Textract only), whose one permission is to publish there; the topic delivers it, raw, to
        the OCR queue. What a job read is kept under ocr/."""
        if config.ocr != "textract":
            return
        assert self.ocr is not None
        topic = sns.Topic(self, "TextractDone", enforce_ssl=True)
        publisher = iam.Role(self, "TextractPublisher", assumed_by=iam.ServicePrincipal("textract.amazonaws.com"),
                             description="Amazon Textract publishes citewell's OCR job completions to their topic")
        topic.grant_publish(publisher)
        topic.add_subscription(subscriptions.SqsSubscription(self._ocr_inbox, raw_message_delivery=True))
        for fn in (self.stages["parse"], self.ocr):
            fn.add_environment("CITEWELL_OCR", "textract")
            fn.add_environment("CITEWELL_TEXTRACT_TOPIC_ARN", topic.topic_arn)
            fn.add_environment("CITEWELL_TEXTRACT_ROLE_ARN", publisher.role_arn)
            reads = ["textract:DetectDocumentText", *JOBS] if fn is self.stages["parse"] else JOBS  # OCR: jobs only
            fn.add_to_role_policy(iam.PolicyStatement(actions=reads, resources=["*"]))
            fn.add_to_role_policy(iam.PolicyStatement(
                actions=["iam:PassRole"], resources=[publisher.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "textract.amazonaws.com"}}))
            fn.add_to_role_policy(iam.PolicyStatement(actions=["s3:PutObject"],
                                                      resources=[self._bucket.arn_for_objects("ocr/*")]))

    def _bedrock(self, config: StackConfig, stack: cdk.Stack) -> None:
        """InvokeModel only for what is configured, only for the functions that call it."""
        if config.embedder == "bedrock":  # embed writes vectors, the API embeds questions, the audit re-embeds
            model = f"arn:aws:bedrock:{stack.region}::foundation-model/{config.embedding_model}"
            for fn in (self.stages["embed"], self.api, self.audit):
                fn.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[model]))
        if config.generator == "bedrock" and config.generator_model:
            self.api.add_environment("CITEWELL_GENERATOR", "bedrock")
            self.api.add_environment("CITEWELL_BEDROCK_MODEL_ID", config.generator_model)
            self.api.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"],
                                                            resources=generator_resources(config.generator_model, stack)))
        if config.reranker == "bedrock" and config.rerank_model:
            # The Rerank API is one action without a resource type; which model it may run is the
            # InvokeModel grant's, scoped to the configured one (Bedrock's documented pairing).
            model = f"arn:aws:bedrock:{stack.region}::foundation-model/{config.rerank_model}"
            self.api.add_environment("CITEWELL_RERANKER", "bedrock")
            self.api.add_environment("CITEWELL_BEDROCK_RERANK_MODEL_ARN", model)
            self.api.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
            self.api.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[model]))
            if product := MARKETPLACE_PRODUCTS.get(config.rerank_model):
                # Sold through AWS Marketplace: the first call subscribes the account, under this role.
                # Neither action has a resource type ("*" is the only resource IAM accepts).
                self.api.add_to_role_policy(iam.PolicyStatement(actions=["aws-marketplace:ViewSubscriptions"],
                                                                resources=["*"]))
                self.api.add_to_role_policy(iam.PolicyStatement(
                    actions=["aws-marketplace:Subscribe"], resources=["*"],
                    conditions={"ForAnyValue:StringEquals": {"aws-marketplace:ProductId": [product]}}))


def generator_resources(model_id: str, stack: cdk.Stack) -> list[str]:
    """A model id, or a cross-region inference profile (``eu.``, ``us.``, ``apac.`` ... prefix): the
    profile in this account and region, and the model in every region the profile routes to."""
    geo, _, base = model_id.partition(".")
    if geo in ("us", "eu", "apac", "us-gov", "ca", "jp", "au", "global") and base:
        return [f"arn:aws:bedrock:{stack.region}:{stack.account}:inference-profile/{model_id}",
                f"arn:aws:bedrock:*::foundation-model/{base}"]
    return [f"arn:aws:bedrock:{stack.region}::foundation-model/{model_id}"]


_RETENTION = {
    1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK", 14: "TWO_WEEKS", 30: "ONE_MONTH", 60: "TWO_MONTHS",
    90: "THREE_MONTHS", 120: "FOUR_MONTHS", 150: "FIVE_MONTHS", 180: "SIX_MONTHS", 365: "ONE_YEAR", 400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS", 1827: "FIVE_YEARS", 3653: "TEN_YEARS",
}


def retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION:
        raise ValueError(f"log_retention_days={days} is not a CloudWatch Logs retention; one of {sorted(_RETENTION)}")
    return getattr(logs.RetentionDays, _RETENTION[days])  # type: ignore[no-any-return]
