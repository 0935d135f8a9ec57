"""What the handlers send to X-Ray: timings, annotations and AWS call names, never a response or
an exception object, which carry passages, answers, whole texts and the inputs that failed.

Each handler runs in a fresh interpreter set up as Lambda sets one up for an active trace
(``LAMBDA_TASK_ROOT``, a sampled ``_X_AMZN_TRACE_ID``), so Powertools' Tracer is on; the X-Ray
daemon it streams subsegments to is a UDP socket here. AWS itself is moto, in that interpreter.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RUN = r"""
import importlib.util, json, sys
from dataclasses import dataclass
from moto import mock_aws

root = sys.argv[1]

@dataclass
class Context:
    function_name: str = "citewell-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:citewell-test"
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"

def handler(function):
    spec = importlib.util.spec_from_file_location(f"functions_{function}", f"{root}/functions/{function}/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler

with mock_aws():
    request = json.load(open(f"{root}/events/api_request.json"))
    request.update(routeKey="GET /me", rawPath="/me", body=None)
    request["requestContext"]["http"].update(method="GET", path="/me")
    reply = handler("api")(request, Context())
    assert reply["statusCode"] == 200 and "northpier" in reply["body"], reply
    try:  # the metadata table is missing: every record fails, so the whole batch raises
        handler("parse")(json.load(open(f"{root}/events/sqs_s3_object_created.json")), Context())
    except Exception:
        pass
    else:
        raise AssertionError("the parse batch was expected to fail")
"""


def traced_run() -> list[dict]:
    """The subsegments the handlers streamed to the X-Ray daemon."""
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    daemon.settimeout(0.5)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_", "CITEWELL_"))}
    env.update({
        "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
        "LAMBDA_TASK_ROOT": str(ROOT / "functions"), "AWS_LAMBDA_FUNCTION_NAME": "citewell-test",
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{daemon.getsockname()[1]}",
        "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
        "CITEWELL_BUCKET": "citewell-documents", "CITEWELL_TABLE": "citewell-metadata",
        "CITEWELL_OPENSEARCH_URL": "http://127.0.0.1:9", "CITEWELL_EMBEDDER": "minilm", "POWERTOOLS_LOG_LEVEL": "ERROR",
    })
    subprocess.run([sys.executable, "-c", RUN, str(ROOT)], env=env, check=True, capture_output=True, timeout=300)
    sent = []
    try:
        while True:
            packet = daemon.recv(65536).decode()
            sent.append(json.loads(packet.split("\n", 1)[1]))  # a header line, then the entity
    except TimeoutError:
        pass
    finally:
        daemon.close()
    return sent


def metadata(entity: dict) -> list[str]:
    """The metadata keys of a subsegment and of every subsegment inside it."""
    keys = [key for namespace in entity.get("metadata", {}).values() for key in namespace]
    return keys + [key for child in entity.get("subsegments", []) for key in metadata(child)]


def test_no_response_or_exception_object_is_traced():
    sent = traced_run()
    names = sorted(entity["name"] for entity in sent)
    assert "## handler" in names and any(n.endswith("record_handler") for n in names), names  # tracing was on, both ran
    assert any(entity.get("error") or entity.get("fault") for entity in sent)  # a record failed and was traced as failed
    assert [key for entity in sent for key in metadata(entity)] == []
