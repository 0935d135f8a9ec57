"""The Cognito sign-in behind `citewell login`: an ID token for the API on AWS, from a user name and password.

The stack's app client allows USER_PASSWORD_AUTH, and users are created by an administrator
with a temporary password, so a user's first sign-in answers NEW_PASSWORD_REQUIRED with a new
one. InitiateAuth and RespondToAuthChallenge take no AWS credentials (the password is the
credential), so requests go unsigned and a user needs no AWS account set up. The ID token is
the one the API takes: it carries ``custom:tenant`` and ``cognito:groups`` and its ``aud`` is
the app client the authorizer checks.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from citewell.errors import CitewellError, InvalidInput


class SignInRefused(CitewellError):
    """Cognito said no: a wrong password, an unknown client, a flow the client does not allow."""

    code = "sign_in_refused"


def region_or_default(region: str | None) -> str:
    found = region or boto3.session.Session().region_name
    if not found:
        raise InvalidInput("no AWS region: pass --region, the stack's region (or set AWS_REGION)")
    return found


def client(region: str) -> Any:
    return boto3.client("cognito-idp", region_name=region,
                        config=Config(signature_version=UNSIGNED, retries={"mode": "standard", "max_attempts": 3}))


def sign_in(cognito: Any, client_id: str, username: str, password: str, new_password: Callable[[], str]) -> dict[str, Any]:
    """The AuthenticationResult (IdToken, ExpiresIn, ...); ``new_password`` is asked only on a
    first sign-in, when Cognito requires the temporary password be replaced."""
    try:
        reply = cognito.initiate_auth(ClientId=client_id, AuthFlow="USER_PASSWORD_AUTH",
                                      AuthParameters={"USERNAME": username, "PASSWORD": password})
        if reply.get("ChallengeName") == "NEW_PASSWORD_REQUIRED":
            parameters = reply.get("ChallengeParameters") or {}
            required = json.loads(parameters.get("requiredAttributes") or "[]")
            if required:
                raise SignInRefused(f"the first sign-in needs {', '.join(required)}, which only an administrator "
                                    "sets here: aws cognito-idp admin-update-user-attributes")
            # A pool that signs in by email names the user by its internal id in the challenge.
            name = parameters.get("USER_ID_FOR_SRP") or parameters.get("USERNAME") or username
            reply = cognito.respond_to_auth_challenge(
                ClientId=client_id, ChallengeName="NEW_PASSWORD_REQUIRED", Session=reply["Session"],
                ChallengeResponses={"USERNAME": name, "NEW_PASSWORD": new_password()})
    except ClientError as error:
        raise _refusal(error, client_id) from None
    except BotoCoreError as error:
        raise SignInRefused(f"could not reach Cognito: {error}") from None
    if "AuthenticationResult" not in reply:
        raise SignInRefused(f"Cognito asks for {reply.get('ChallengeName')}, which citewell login does not answer "
                            "(multi-factor sign-in): use a client that does, such as the AWS SDK's SRP flow")
    return dict(reply["AuthenticationResult"])


def _refusal(error: ClientError, client_id: str) -> CitewellError:
    code = error.response.get("Error", {}).get("Code", "")
    message = error.response.get("Error", {}).get("Message", str(error))
    if code == "InvalidPasswordException":
        return InvalidInput(f"the new password: {message}")
    if code == "ResourceNotFoundException":
        return SignInRefused(f"no app client {client_id} in this region: check --client-id and --region ({message})")
    return SignInRefused(f"Cognito refused the sign-in: {message}")


def claims(token: str) -> dict[str, Any]:
    """The token's payload, unverified: only to say who signed in (the API verifies it)."""
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
