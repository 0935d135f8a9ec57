"""The HTTP API: every route behind a JWT authorizer (a Cognito user pool, or an external issuer).

The API takes the Cognito **ID token**: it carries the user's ``custom:tenant`` and
``cognito:groups`` and its ``aud`` is the app client, which the authorizer checks. An access
token carries no custom attributes, so the handler would refuse it (403, saying which token to
send). An external issuer must name its audience; synthesis refuses it otherwise.

The stage is throttled (every route: a steady rate and a burst; beyond them API Gateway answers
429 and no function runs) and writes one JSON access-log line a request, with what failed before
the function (the authorizer's error, API Gateway's own, the integration's), to a log group the
stack keeps ``log_retention_days``.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

ROUTES = [
    ("/documents", apigw.HttpMethod.POST), ("/documents", apigw.HttpMethod.GET),
    # Greedy: document ids may contain '/' (folder ingests), sent as raw segments or as %2F.
    ("/documents/{id+}", apigw.HttpMethod.GET), ("/documents/{id+}", apigw.HttpMethod.DELETE),
    ("/search", apigw.HttpMethod.POST), ("/query", apigw.HttpMethod.POST),
    ("/answers/{id}/citations", apigw.HttpMethod.GET), ("/answers/{id}/feedback", apigw.HttpMethod.POST),
    ("/conversations", apigw.HttpMethod.GET), ("/conversations/{id}", apigw.HttpMethod.GET),
    ("/me", apigw.HttpMethod.GET),
]

# One access-log line a request, as JSON: API Gateway's $context variables for HTTP APIs
# ("Customize HTTP API access logs"). No claim is logged: a line names the request, not its user.
# ``$context.error.messageString`` is the message already quoted, so a quote in it keeps the line JSON.
ACCESS_LOG = {
    "requestId": "$context.requestId", "extendedRequestId": "$context.extendedRequestId",
    "requestTime": "$context.requestTime", "ip": "$context.identity.sourceIp",
    "userAgent": "$context.identity.userAgent", "httpMethod": "$context.httpMethod", "routeKey": "$context.routeKey",
    "path": "$context.path", "protocol": "$context.protocol", "status": "$context.status",
    "responseLength": "$context.responseLength", "responseLatency": "$context.responseLatency",
    "integrationStatus": "$context.integrationStatus", "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage", "authorizerError": "$context.authorizer.error",
    "errorType": "$context.error.responseType", "error": "$context.error.messageString",
}


def access_log_format() -> str:
    """The format API Gateway fills in: JSON with ``error`` unquoted, since its value arrives quoted."""
    return json.dumps(ACCESS_LOG, separators=(",", ":")).replace('"$context.error.messageString"',
                                                                 "$context.error.messageString")


class Api(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction,
                 issuer: str | None, audience: str | None, throttle_rate: float, throttle_burst: int) -> None:
        super().__init__(scope, construct_id)
        if issuer is None:
            pool = cognito.UserPool(self, "Users", self_sign_up_enabled=False, sign_in_aliases=cognito.SignInAliases(email=True),
                                    custom_attributes={"tenant": cognito.StringAttribute(mutable=False, min_len=1, max_len=64)},
                                    removal_policy=cdk.RemovalPolicy.RETAIN)
            # Users read their tenant in the ID token but can never write it (only an administrator sets it).
            # They sign in with `citewell login` (USER_PASSWORD_AUTH, over TLS to Cognito) or SRP; there is no
            # hosted UI, so no OAuth flow (the CDK's default would send codes to https://example.com).
            client = pool.add_client(
                "Web", auth_flows=cognito.AuthFlow(user_srp=True, user_password=True), disable_o_auth=True,
                prevent_user_existence_errors=True, generate_secret=False,
                read_attributes=cognito.ClientAttributes().with_standard_attributes(email=True).with_custom_attributes("tenant"),
                write_attributes=cognito.ClientAttributes().with_standard_attributes(email=True),
            )
            issuer = f"https://cognito-idp.{cdk.Stack.of(self).region}.amazonaws.com/{pool.user_pool_id}"
            audience = client.user_pool_client_id
            cdk.CfnOutput(self, "UserPoolId", value=pool.user_pool_id)
            cdk.CfnOutput(self, "ClientId", value=client.user_pool_client_id)
        if not audience:
            raise ValueError("an external JWT issuer needs an audience (-c jwt_audience=...)")
        authorizer = authorizers.HttpJwtAuthorizer("Jwt", issuer, jwt_audience=[audience])
        self.http_api = apigw.HttpApi(self, "Http", default_authorizer=authorizer)
        integration = integrations.HttpLambdaIntegration("Handler", handler)
        for path, method in ROUTES:
            self.http_api.add_routes(path=path, methods=[method], integration=integration, authorizer=authorizer)
        self.access_logs = logs.LogGroup(self, "AccessLogs", removal_policy=cdk.RemovalPolicy.DESTROY)
        stage = self.http_api.default_stage.node.default_child  # type: ignore[union-attr]
        assert isinstance(stage, apigw.CfnStage)
        # The default stage itself (a new construct would replace the $default stage), set through its resource.
        stage.default_route_settings = apigw.CfnStage.RouteSettingsProperty(
            throttling_rate_limit=throttle_rate, throttling_burst_limit=throttle_burst)
        group = cdk.Stack.of(self).format_arn(service="logs", resource="log-group", resource_name=self.access_logs.log_group_name,
                                               arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        stage.access_log_settings = apigw.CfnStage.AccessLogSettingsProperty(destination_arn=group, format=access_log_format())
        cdk.CfnOutput(self, "Url", value=self.http_api.api_endpoint)
