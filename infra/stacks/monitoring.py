"""Alarms, sent to one SNS topic (an email subscription from context ``alarm_email``): anything
in a dead-letter queue, and any function error."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct


class Alarms(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, queues: list[sqs.Queue], functions: list[lambda_.Function],
                 email: str | None) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Alarms", display_name="citewell alarms", enforce_ssl=True)
        if email:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        notify = actions.SnsAction(self.topic)
        for n, queue in enumerate(queues):
            queue.metric_approximate_number_of_messages_visible().create_alarm(
                self, f"DeadLetters{n}", threshold=1, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                alarm_description="messages were dead-lettered: a document failed more than the retry limit",
            ).add_alarm_action(notify)
        for n, fn in enumerate(functions):
            fn.metric_errors().create_alarm(
                self, f"Errors{n}", threshold=1, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{fn.node.id} raised an error",
            ).add_alarm_action(notify)
