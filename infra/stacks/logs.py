"""Every log group the stack makes is kept ``log_retention_days``, and every function logs to one.

Our functions get their own groups (``stacks.functions``). The CDK's helper functions do not:
with ``useCdkManagedLogGroup`` the custom-resource function behind the search domain's access
policy gets a group (``/aws/lambda/<name>``) kept two years, and the bucket-notifications
handler (a raw resource the flag does not reach) would log to a group Lambda creates on its
first run and keeps forever. Both are held to the configured retention here, once the stack's
constructs exist.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs


def keep_logs(stack: cdk.Stack, days: int, retention: logs.RetentionDays) -> None:
    """Give every raw function resource a group of its own, and hold every group to ``days``."""
    for node in list(stack.node.find_all()):
        if isinstance(node, cdk.CfnResource) and node.cfn_resource_type == "AWS::Lambda::Function" \
                and not isinstance(node, lambda_.CfnFunction):
            group = logs.LogGroup(node.node.scope, f"{node.node.id}Logs", retention=retention,  # type: ignore[arg-type]
                                  removal_policy=cdk.RemovalPolicy.DESTROY)
            node.add_property_override("LoggingConfig.LogGroup", group.log_group_name)
    for node in stack.node.find_all():
        if isinstance(node, logs.CfnLogGroup):
            node.retention_in_days = days
