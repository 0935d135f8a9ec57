"""The HTTP API: every route behind a JWT authorizer (a Cognito user pool, or an external issuer).

The API takes the Cognito **ID token**: it carries the user's ``custom:tenant`` and
``cognito:groups`` and its ``aud`` is the app client, which the authorizer checks. An access
token carries no custom attributes, so the handler would refuse it (403, saying which token to
send). An external issuer must name its audience; synthesis refuses it otherwise.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
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


class Api(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction,
                 issuer: str | None, audience: str | None) -> None:
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
        cdk.CfnOutput(self, "Url", value=self.http_api.api_endpoint)
