"""Alarms: anything in a dead-letter queue, and any function error."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct


class Alarms(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, queues: list[sqs.Queue], functions: list[lambda_.Function]) -> None:
        super().__init__(scope, construct_id)
        for n, queue in enumerate(queues):
            queue.metric_approximate_number_of_messages_visible().create_alarm(
                self, f"DeadLetters{n}", threshold=1, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                alarm_description="messages were dead-lettered: a document failed more than the retry limit",
            )
        for n, fn in enumerate(functions):
            fn.metric_errors().create_alarm(
                self, f"Errors{n}", threshold=1, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
