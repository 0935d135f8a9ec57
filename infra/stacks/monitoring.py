"""Alarms, sent to one SNS topic (an email subscription from context ``alarm_email``): anything
in a dead-letter queue, a message waiting in a stage's queue longer than its function may run,
any function error, the API function throttled at its reserved concurrency, any 5xx the API
answers, the search domain's health (red or yellow cluster, writes blocked, no reachable master,
CPU, free storage, JVM memory pressure, a failed automated snapshot, and the dedicated masters'
CPU and memory where there are any), an audit finding it could not repair, an expunge the domain
refused, and a stage refusing to write for an index a migration moved to another embedder before
the redeploy.

The API handler answers an unexpected exception with a 500 instead of raising, so its Lambda
``Errors`` alarm never sees one: the 5xx alarm on the HTTP API does. A topic nobody subscribes
to alarms nobody, so synthesis warns when ``alarm_email`` is not given."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_opensearchservice as opensearch
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.search import Capacity

AT_LEAST = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
AT_MOST = cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD
BELOW = cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
MINUTE = cdk.Duration.minutes(1)
# A message older than its function's timeout plus this has waited through a whole invocation
# and more: the stage is stalled or behind (a function that hangs until its timeout, a backlog).
QUEUE_AGE_MARGIN_S = 300
# What the audit function emits (citewell.lambdas.handlers.audit_handler, Powertools' EMF: the
# service is a dimension of every metric).
NAMESPACE, AUDIT_SERVICE = "citewell", "citewell-audit"
SWITCH_STAGES = ("embed", "publish")  # the stages that check the index's embedder (citewell.lambdas.pipeline)


class Alarms(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, queues: list[sqs.Queue],
                 inboxes: dict[str, tuple[sqs.Queue, int]], functions: list[lambda_.Function], api: lambda_.Function,
                 email: str | None, domain: opensearch.Domain, capacity: Capacity, http_api: apigw.HttpApi) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Alarms", display_name="citewell alarms", enforce_ssl=True)
        if email:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        else:
            cdk.Annotations.of(self).add_warning_v2(
                "citewell:alarm-subscriber", "no alarm_email: the alarms notify an SNS topic nobody is subscribed to; pass "
                "-c alarm_email=ops@example.com, or subscribe to the topic yourself")
        self._notify = actions.SnsAction(self.topic)

        for n, queue in enumerate(queues):
            self._alarm(f"DeadLetters{n}", queue.metric_approximate_number_of_messages_visible(), 1, AT_LEAST,
                        "messages were dead-lettered: a document failed more than the retry limit", missing=False)
        # SQS publishes its metrics each minute, and none for an empty queue (no data: no alarm). A
        # message received three times leaves this metric (SQS moves it to the back of the queue),
        # but the visibility timeout is six function timeouts, so the age passes the threshold first.
        for name, (inbox, timeout) in inboxes.items():
            age = inbox.metric_approximate_age_of_oldest_message(period=MINUTE, statistic="Maximum")
            self._alarm(f"QueueAge{name.capitalize()}", age, timeout + QUEUE_AGE_MARGIN_S, AT_LEAST,
                        f"a message has waited in {name}'s queue over {(timeout + QUEUE_AGE_MARGIN_S) // 60} minutes "
                        f"(the function's {timeout} s timeout and {QUEUE_AGE_MARGIN_S // 60} more): {name} is stalled or "
                        "behind")
        for n, fn in enumerate(functions):
            self._alarm(f"Errors{n}", fn.metric_errors(), 1, AT_LEAST, f"{fn.node.id} raised an error")
        # The API function's reserved concurrency caps it: a request beyond it is refused by Lambda,
        # not answered (the stage's throttle is meant to turn the excess into 429s first).
        self._alarm("ApiThrottled", api.metric_throttles(period=MINUTE, statistic="Sum"), 1, AT_LEAST,
                    "the API function was throttled at its reserved concurrency: raise api_reserved_concurrency or "
                    "lower api_throttle_rate")
        self._alarm("Api5xx", http_api.metric_server_error(period=MINUTE, statistic="Sum"), 1, AT_LEAST,
                    "the API answered 5xx: an unexpected error (the handler answers it, so no function error shows it)")

        # The domain, as AWS recommends for OpenSearch Service (AWS/ES, by DomainName and ClientId).
        self._alarm("ClusterRed", domain.metric_cluster_status_red(period=MINUTE, statistic="Maximum"), 1, AT_LEAST,
                    "the search domain is red: a primary shard and its replicas are unassigned", missing=False)
        self._alarm("ClusterYellow", domain.metric_cluster_status_yellow(period=MINUTE, statistic="Maximum"), 1, AT_LEAST,
                    "the search domain is yellow: a replica shard is unassigned (a node is gone)", periods=5, missing=False)
        self._alarm("WritesBlocked", domain.metric_cluster_index_writes_blocked(period=cdk.Duration.minutes(5),
                                                                                statistic="Maximum"), 1, AT_LEAST,
                    "the search domain blocks writes (ClusterBlockException: storage or memory): publish fails", missing=False)
        self._alarm("MasterUnreachable", domain.metric("MasterReachableFromNode", period=cdk.Duration.minutes(5),
                                                       statistic="Maximum"), 1, BELOW,
                    "no search node reached an elected master for five minutes (MasterNotDiscovered)", missing=False)
        self._alarm("Cpu", domain.metric_cpu_utilization(period=cdk.Duration.minutes(15), statistic="Maximum"), 80,
                    AT_LEAST, "a search data node's CPU is at 80% for 45 minutes", periods=3, missing=False)
        if capacity.masters:
            self._alarm("MasterCpu", domain.metric_master_cpu_utilization(period=cdk.Duration.minutes(15),
                                                                          statistic="Maximum"), 50, AT_LEAST,
                        "a dedicated master's CPU is at 50% for 45 minutes", periods=3, missing=False)
            self._alarm("MasterJvmPressure", domain.metric_master_jvm_memory_pressure(period=MINUTE, statistic="Maximum"),
                        95, AT_LEAST, "a dedicated master's JVM memory pressure is at 95%", periods=3, missing=False)
        self._alarm("FreeStorage", domain.metric_free_storage_space(period=MINUTE, statistic="Minimum"),
                    capacity.volume_gib * 1024 // 4, AT_MOST, "a search node is down to 25% of its storage (MiB)",
                    missing=False)
        self._alarm("JvmPressure", domain.metric_jvm_memory_pressure(period=MINUTE, statistic="Maximum"), 95, AT_LEAST,
                    "search nodes' JVM memory pressure is at 95%: out-of-memory errors are near", periods=3, missing=False)
        self._alarm("SnapshotFailed", domain.metric_automated_snapshot_failure(period=MINUTE, statistic="Maximum"), 1,
                    AT_LEAST, "an automated snapshot of the search domain failed")

        # The audit's own metrics: what it found and could not repair, and an expunge the domain refused.
        def audit(name: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(namespace=NAMESPACE, metric_name=name, dimensions_map={"service": AUDIT_SERVICE},
                                     statistic="Sum", period=cdk.Duration.hours(1))

        # A repair handed to the ingestion chain (a re-ingest) is started, not failed; if the chain fails
        # it, the next audit finds the document failed and says it could not repair it.
        counts = {"findings": audit("AuditFindings"), "repairs": audit("AuditRepairs"), "started": audit("AuditRepairsStarted")}
        unrepaired = cloudwatch.MathExpression(expression="findings - repairs - started", label="unrepaired audit findings",
                                               using_metrics=counts, period=cdk.Duration.hours(1))
        self._alarm("AuditUnrepaired", unrepaired, 1, AT_LEAST,
                    "the audit found what it could not repair: see its 'audit finding' log lines")
        self._alarm("ExpungeFailed", audit("ExpungeFailed"), 1, AT_LEAST,
                    "the audit could not ask the search domain to expunge deleted rows")

        # A stage refusing vectors for an index migrated to another model: retried, not an error of the function.
        for stage in SWITCH_STAGES:
            switched = cloudwatch.Metric(namespace=NAMESPACE, metric_name="EmbedderSwitched", statistic="Sum",
                                         dimensions_map={"service": f"citewell-{stage}"}, period=cdk.Duration.minutes(5))
            self._alarm(f"EmbedderSwitched{stage.capitalize()}", switched, 1, AT_LEAST,
                        f"{stage} refused to write for an index migrated to another embedder: redeploy with it "
                        "(the queue retries the uploads until then)")

    def _alarm(self, name: str, metric: cloudwatch.Metric | cloudwatch.MathExpression, threshold: float,
               comparison: cloudwatch.ComparisonOperator, description: str, periods: int = 1,
               missing: bool = True) -> cloudwatch.Alarm:
        """``missing``: no data is no event (a function that did not run, a metric only emitted on failure)."""
        alarm = metric.create_alarm(
            self, name, threshold=threshold, evaluation_periods=periods, comparison_operator=comparison,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING if missing else None,
            alarm_description=description)
        alarm.add_alarm_action(self._notify)
        return alarm
