"""`citewell login`: a user's way to an ID token on AWS, against moto's Cognito with the user
pool and app client as the stack synthesizes them. An administrator creates the user with a
temporary password; the first sign-in replaces it (NEW_PASSWORD_REQUIRED); the token carries
what the API reads, under the claim names of cdk.json."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import boto3
import pytest

pytest.importorskip("moto.cognitoidp", reason="moto's cognito-idp needs joserfc (moto[cognitoidp], in the dev extra)")
from moto import mock_aws  # noqa: E402

from citewell.api.callers import claims_identity  # noqa: E402
from citewell.api.settings import ApiSettings  # noqa: E402
from citewell.cli import main  # noqa: E402
from citewell.cli.cognito import claims  # noqa: E402
from citewell.models.identity import Identity  # noqa: E402
from tests.project.test_infra import CONTEXT, synth  # noqa: E402
from tests.project.test_plain_install import cli, plain_python  # noqa: E402, F401

REGION = "eu-west-1"
USER = "ann@northpier.example"
TEMPORARY, CHOSEN = "Temp-pass-1!", "Chosen-pass-2!"


@pytest.fixture(scope="module")
def cognito_template(tmp_path_factory) -> dict:
    """The user pool and app client, as synthesized."""
    resources = synth(tmp_path_factory).to_json()["Resources"].values()
    (pool,) = [r["Properties"] for r in resources if r["Type"] == "AWS::Cognito::UserPool"]
    (client,) = [r["Properties"] for r in resources if r["Type"] == "AWS::Cognito::UserPoolClient"]
    return {"pool": pool, "client": client}


@pytest.fixture
def pool(cognito_template, monkeypatch) -> Iterator[dict]:
    """moto's pool and client from the template's properties, and a user an administrator made."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    for name in ("CITEWELL_TENANT_CLAIM", "CITEWELL_ROLES_CLAIM"):
        monkeypatch.delenv(name, raising=False)
    spec, app = cognito_template["pool"], cognito_template["client"]
    # moto signs in through any client; Cognito only through the flows the client allows.
    assert "ALLOW_USER_PASSWORD_AUTH" in app["ExplicitAuthFlows"]
    with mock_aws():
        admin = boto3.client("cognito-idp", region_name=REGION)
        pool_id = admin.create_user_pool(PoolName="citewell", Schema=spec["Schema"], UsernameAttributes=spec["UsernameAttributes"],
                                         AdminCreateUserConfig=spec["AdminCreateUserConfig"])["UserPool"]["Id"]
        client_id = admin.create_user_pool_client(
            UserPoolId=pool_id, ClientName="web", ExplicitAuthFlows=app["ExplicitAuthFlows"],
            ReadAttributes=app["ReadAttributes"], WriteAttributes=app["WriteAttributes"],
        )["UserPoolClient"]["ClientId"]
        admin.admin_create_user(UserPoolId=pool_id, Username=USER, TemporaryPassword=TEMPORARY, MessageAction="SUPPRESS",
                                UserAttributes=[{"Name": "email", "Value": USER}, {"Name": "email_verified", "Value": "true"},
                                                {"Name": "custom:tenant", "Value": "northpier"}])
        for group in ("staff", "citewell:write"):
            admin.create_group(UserPoolId=pool_id, GroupName=group)
            admin.admin_add_user_to_group(UserPoolId=pool_id, Username=USER, GroupName=group)
        yield {"pool_id": pool_id, "client_id": client_id}


def login(capsys, monkeypatch, client_id: str, stdin: str, *extra: str) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["login", "--client-id", client_id, "--username", USER, "--region", REGION, "--password-stdin", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def as_the_authorizer_passes_them(token_claims: dict) -> dict:
    """The HTTP API's JWT authorizer hands claims on as strings, a list as "[a b]"."""
    return {k: f"[{' '.join(v)}]" if isinstance(v, list) else str(v) for k, v in token_claims.items()}


def test_a_first_sign_in_replaces_the_temporary_password_and_yields_the_token_the_api_takes(pool, capsys, monkeypatch):
    code, signed_in = login(capsys, monkeypatch, pool["client_id"], f"{TEMPORARY}\n{CHOSEN}\n")
    assert code == 0, signed_in
    token = claims(signed_in["id_token"])
    assert token["token_use"] == "id" and token["aud"] == pool["client_id"]  # the audience the authorizer checks
    settings = ApiSettings(tenant_claim=CONTEXT["tenant_claim"], roles_claim=CONTEXT["roles_claim"])
    assert claims_identity(as_the_authorizer_passes_them(token), settings) == Identity(
        tenant="northpier", roles=frozenset({"staff", "citewell:write"}), subject=f"token:{token['sub']}")
    assert signed_in["tenant"] == "northpier" and signed_in["roles"] == ["citewell:write", "staff"]

    code, again = login(capsys, monkeypatch, pool["client_id"], f"{CHOSEN}\n")  # no challenge the second time
    assert code == 0 and claims(again["id_token"])["custom:tenant"] == "northpier"
    code, refused = login(capsys, monkeypatch, pool["client_id"], f"{TEMPORARY}\n")
    assert code == 2 and refused["error"]["code"] == "sign_in_refused"


def test_on_a_terminal_the_passwords_are_asked_and_the_token_can_go_to_a_private_file(pool, capsys, monkeypatch, tmp_path):
    import getpass

    answers = iter([TEMPORARY, CHOSEN, CHOSEN])
    prompts: list[str] = []
    monkeypatch.setattr(getpass, "getpass", lambda prompt: prompts.append(prompt) or next(answers))
    out = tmp_path / "token"
    out.write_text("an older token")
    out.chmod(0o644)
    code = main(["login", "--client-id", pool["client_id"], "--username", USER, "--region", REGION, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert prompts == [f"Password for {USER}: ", "First sign-in: choose a new password: ", "The new password again: "]
    assert os.stat(out).st_mode & 0o777 == 0o600
    assert claims(out.read_text().strip())["custom:tenant"] == "northpier"
    assert printed.out == ""  # the token went to the file only
    assert f"signed in as {USER} (tenant northpier, roles citewell:write,staff)" in printed.err and str(out) in printed.err


def test_refusals_are_one_line_that_says_what_to_do(pool, capsys, monkeypatch):
    import getpass

    code, wrong = login(capsys, monkeypatch, pool["client_id"], "Not-the-password-1!\n")
    assert code == 2 and wrong["error"] == {"code": "sign_in_refused",
                                            "message": "Cognito refused the sign-in: Incorrect username or password."}
    code, unknown = login(capsys, monkeypatch, "nosuchclient", f"{TEMPORARY}\n")
    assert code == 2 and "no app client nosuchclient in this region" in unknown["error"]["message"]
    code, weak = login(capsys, monkeypatch, pool["client_id"], f"{TEMPORARY}\nshort\n")
    assert code == 2 and weak["error"]["code"] == "invalid_input" and weak["error"]["message"].startswith("the new password: ")
    code, missing = login(capsys, monkeypatch, pool["client_id"], f"{TEMPORARY}\n")
    assert code == 2 and missing["error"]["message"].startswith("no new password on stdin")

    answers = iter([TEMPORARY, CHOSEN, "Another-pass-3!"])
    monkeypatch.setattr(getpass, "getpass", lambda prompt: next(answers))
    assert main(["login", "--client-id", pool["client_id"], "--username", USER, "--region", REGION]) == 2
    err = capsys.readouterr().err
    assert err == "citewell: the two new passwords differ\n"


def test_without_a_region_it_says_to_pass_one(capsys, monkeypatch, tmp_path):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setattr(sys, "stdin", io.StringIO("x\n"))
    assert main(["login", "--client-id", "c", "--username", USER, "--password-stdin"]) == 2
    assert "no AWS region: pass --region" in capsys.readouterr().err


def test_the_cli_loads_no_aws_sdk_until_login_runs():
    """Every command's start-up pays for what the CLI imports: boto3 only once login is asked for."""
    probe = ("import sys; from citewell.cli import _parser; "
             "_parser().parse_args(['login', '--client-id', 'c', '--username', 'u']); "
             "print(sorted(m for m in ('boto3', 'botocore') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout.strip() == "[]"


def test_without_the_aws_extra_login_names_it(plain_python):  # noqa: F811
    done = cli(plain_python, "login", "--client-id", "c", "--username", USER, "--region", REGION, "--password-stdin")
    assert done.returncode == 2 and "pip install 'citewell[aws]'" in done.stderr and done.stderr.count("\n") == 1
