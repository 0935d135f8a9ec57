"""The model generators measured through the local model server: real HTTP, the stand-in model's
faults caught by verification and counted by the evaluation, and nothing unreadable shown."""

from __future__ import annotations

import json
import subprocess
import sys

import boto3
import httpx
import pytest

from benchmarks import ROOT
from benchmarks.model_generators import fault_outcomes
from benchmarks.model_server import MODEL_NAME, serve
from benchmarks.standin_model import Fault, StandInModel
from citewell.answers.generators.bedrock import BedrockGenerator
from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.prompt import REFUSAL_SENTINEL, SYSTEM_PROMPT, user_prompt
from citewell.answers.service import ask
from citewell.answers.verify import Rejection
from citewell.cli import main
from citewell.evaluation.answers import AnswerCase, evaluate
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from citewell.models.identity import Identity
from tests import fake_model_service
from tests.conftest import make_services
from tests.fake_model_service import Reply

HANDBOOK = (
    "# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n\n"
    "# Sick leave\n\nReport sickness to your shift lead before the start of your shift.\n"
)
SALARIES = "# Salary bands\n\nA shift lead earns between 44000 and 54000 euros a year.\n"
SECRET = ("44000", "54000", "earns between")
STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))

CASES = [
    {"id": "leave", "question": "How many days of paid annual leave do full-time staff receive?", "refuse": False,
     "category": "number", "expected_documents": ["handbook.md"], "must_contain": ["27 days"]},
    {"id": "sick", "question": "Who do staff report sickness to before a shift?", "refuse": False,
     "category": "who", "expected_documents": ["handbook.md"], "must_contain": ["shift lead"]},
    {"id": "cup", "question": "Which football team won the national cup in 1998?", "refuse": True,
     "category": "out_of_corpus"},
    {"id": "pay", "question": "What salary does a shift lead earn a year?", "refuse": True, "category": "forbidden",
     "expected_documents": ["salaries.md"], "must_not_contain": ["44000"]},
]


def cases() -> list[AnswerCase]:
    return [AnswerCase.model_validate({"tenant": "northpier", "roles": ["staff"], **c}) for c in CASES]


@pytest.fixture
def home(tmp_path, embedder):
    services = make_services(tmp_path / "home", embedder)
    for doc_id, text, role in (("handbook.md", HANDBOOK, "staff"), ("salaries.md", SALARIES, "hr")):
        (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset({role}),
                                                     data=text.encode(), filename=doc_id)])
        assert outcome.status == "published"
    return services


def openai_generator(url: str) -> OpenAICompatibleGenerator:
    return OpenAICompatibleGenerator(base_url=f"{url}/v1", model=MODEL_NAME, retries=0)


def bedrock_generator(url: str) -> BedrockGenerator:
    client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=url,
                          aws_access_key_id="x", aws_secret_access_key="y")
    return BedrockGenerator(MODEL_NAME, client=client)


def evidence(text: str = HANDBOOK) -> list[EvidenceItem]:
    return [EvidenceItem(ref="S1", document_id="handbook.md", revision="r1", title="Handbook", section_path=[], text=text,
                         spans=[EvidenceSpan(chunk_id="handbook.md#0#0", section_path=[], start=0, end=len(text))], rank=1)]


# The stand-in model itself


def test_the_stand_in_quotes_a_source_sentence_or_says_the_prompts_refusal_word():
    model = StandInModel()
    leave = model.reply(SYSTEM_PROMPT, user_prompt(CASES[0]["question"], evidence()))
    assert leave.content == '"Full-time staff receive 27 days of paid annual leave per calendar year." [S1]'
    assert leave.decision == "answer" and leave.fault is None
    cup = model.reply(SYSTEM_PROMPT, user_prompt(CASES[2]["question"], evidence()))
    assert cup.content == REFUSAL_SENTINEL and cup.decision == "refuse"
    # It knows the refusal word only from the prompt: a prompt without one gets prose, which cites nothing.
    assert model.reply("Answer questions.", user_prompt(CASES[2]["question"], evidence())).content.startswith("I cannot")


def test_the_stand_in_is_seeded_by_prompt_and_makes_every_fault_kind():
    prompts = [user_prompt(f"How many days of paid annual leave do full-time staff receive, case {n}?", evidence())
               for n in range(40)]
    model = StandInModel(fault_rate=0.5, seed=3)
    first = [model.reply(SYSTEM_PROMPT, p) for p in prompts]
    assert first == [model.reply(SYSTEM_PROMPT, p) for p in reversed(prompts)][::-1]  # order does not matter
    assert first != [StandInModel(fault_rate=0.5, seed=4).reply(SYSTEM_PROMPT, p) for p in prompts]
    assert 8 <= sum(r.fault is not None for r in first) <= 32
    answering = StandInModel(fault_rate=1.0, seed=3)
    made = {(r.fault, r.content is None) for r in (answering.reply(SYSTEM_PROMPT, p) for p in prompts)}
    assert {f for f, _ in made} == {Fault.INVENTED_SOURCE, Fault.UNSUPPORTED_NUMBER, Fault.FALSE_QUOTE, Fault.MALFORMED}
    assert (Fault.MALFORMED, True) in made and (Fault.MALFORMED, False) in made  # cut off, and prose
    refusing = StandInModel(fault_rate=1.0, faults=(Fault.UNWARRANTED_ANSWER,))
    unwarranted = refusing.reply(SYSTEM_PROMPT, user_prompt(CASES[2]["question"], evidence()))
    assert unwarranted.fault is Fault.UNWARRANTED_ANSWER and unwarranted.content.endswith("[S1]")
    with pytest.raises(ValueError, match="share"):
        StandInModel(fault_rate=1.5)


# The server's HTTP surface


def test_the_server_speaks_enough_of_both_apis():
    server = serve(StandInModel())
    try:
        with httpx.Client(base_url=server.url) as client:
            models = client.get("/v1/models").json()
            assert models["data"][0]["id"] == MODEL_NAME and "stand-in" in models["data"][0]["owned_by"]
            chat = client.post("/v1/chat/completions", json={"model": "anything", "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": [{"type": "text", "text": user_prompt(CASES[0]["question"], evidence())}]},
            ]}).json()
            assert chat["object"] == "chat.completion" and chat["model"] == "anything"
            assert chat["choices"][0]["message"]["content"].endswith("[S1]") and chat["usage"]["total_tokens"] > 0
            for bad, message in (({"messages": []}, "non-empty"), ({"messages": [{"role": "user", "content": "q"}],
                                                                     "stream": "yes"}, "stream must be true or false")):
                response = client.post("/v1/chat/completions", json=bad)
                assert response.status_code == 400 and message in response.json()["error"]["message"]
            streamed = client.post("/v1/chat/completions", json={"model": "m", "stream": True, "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_prompt(CASES[0]["question"], evidence())}]})
            chunks = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")]
            assert streamed.headers["content-type"] == "text/event-stream" and streamed.text.rstrip().endswith("data: [DONE]")
            assert "".join(c["choices"][0]["delta"]["content"] for c in chunks) == chat["choices"][0]["message"]["content"]
            assert client.post("/v1/chat/completions", content=b"{not json").status_code == 400
            assert client.post("/v1/embeddings", json={}).status_code == 404
        draft = bedrock_generator(server.url).generate(CASES[0]["question"], evidence())
        assert draft.quotes == {"S1": "Full-time staff receive 27 days of paid annual leave per calendar year."}
        assert [r["api"] for r in server.replies] == ["chat", "chat", "converse"]
    finally:
        server.shutdown()


# Each fault, through ask and the evaluation


ANSWERING = [(Fault.INVENTED_SOURCE, Rejection.UNKNOWN_SOURCE), (Fault.UNSUPPORTED_NUMBER, Rejection.NUMBER_NOT_IN_SOURCE),
             (Fault.FALSE_QUOTE, Rejection.QUOTE_NOT_IN_SOURCE)]


@pytest.mark.parametrize("make", [openai_generator, bedrock_generator], ids=["openai", "bedrock"])
@pytest.mark.parametrize(("fault", "rejection"), ANSWERING, ids=[f.value for f, _ in ANSWERING])
def test_each_fault_is_rejected_by_verification_and_counted(home, make, fault, rejection):
    server = serve(StandInModel(fault_rate=1.0, faults=(fault,)))
    try:
        generator = make(server.url)
        report = evaluate(cases()[:2], lambda case: ask(home, case.identity, case.question, generator), generator.name)
    finally:
        server.shutdown()
    assert [r["fault"] for r in server.replies] == [fault.value] * 2 and {r["decision"] for r in server.replies} == {"answer"}
    assert report.generator == generator.name and report.rejections == {rejection: 2}
    assert report.overall.drafts_rejected == 2 and report.overall.generator_unavailable == 0
    for judgement in report.judgements:
        assert judgement.rejected == [rejection]
    # What the caller got instead is the extractive answer, which quotes the handbook as it is.
    assert report.judgements[0].correct and "27 days" in report.judgements[0].answer
    assert "28" not in (report.judgements[0].answer or "")


@pytest.mark.parametrize("make", [openai_generator, bedrock_generator], ids=["openai", "bedrock"])
def test_malformed_replies_are_unusable_or_rejected_and_counted(home, make):
    server = serve(StandInModel(fault_rate=1.0, faults=(Fault.MALFORMED,), seed=1))
    try:
        generator = make(server.url)
        report = evaluate(cases(), lambda case: ask(home, case.identity, case.question, generator), generator.name)
    finally:
        server.shutdown()
    cut_off = sum(r["cut_off"] for r in server.replies)
    prose = len(server.replies) - cut_off
    assert len(server.replies) == 4 and cut_off and prose
    assert report.overall.generator_unavailable == cut_off
    assert report.overall.drafts_rejected == prose and report.rejections == {Rejection.UNCITED: prose}
    assert report.overall.answer_accuracy == 1.0 and report.overall.forbidden_text == 0


def test_an_unwarranted_answer_passes_verification_and_the_evaluation_counts_it(home):
    """A real sentence quoted where the answer is not: verification cannot see it; the labels can."""
    server = serve(StandInModel(fault_rate=1.0, faults=(Fault.UNWARRANTED_ANSWER,)))
    try:
        generator = openai_generator(server.url)
        report = evaluate(cases()[2:], lambda case: ask(home, case.identity, case.question, generator), generator.name)
    finally:
        server.shutdown()
    unwarranted = [r for r in server.replies if r["fault"] == "unwarranted_answer"]
    assert unwarranted and report.overall.drafts_rejected == 0
    assert report.overall.fabrications == len(unwarranted) and report.overall.refusal_accuracy < 1.0
    assert report.overall.forbidden_text == 0  # it quoted what the caller may read, never the salaries


# Nothing the caller cannot read, whatever the model sends


@pytest.mark.parametrize("reply", [
    Reply(body={"choices": [{"message": {"content": '"A shift lead earns between 44000 and 54000 euros a year." [S1]'}}]}),
    Reply(body={"choices": [{"message": {"content": "A shift lead earns between 44000 and 54000 euros a year [S1]."}}]}),
    Reply(body={"choices": [{"message": {"content": "A shift lead earns between 44000 and 54000 euros a year."}}]}),
    Reply(body={"choices": [{"message": {"content": "Shift leads earn between 44000 and 54000 euros [S7]."}}]}),
    Reply(body={"choices": [{"message": {"content": f"{REFUSAL_SENTINEL} (a shift lead earns between 44000 and 54000)"}}]}),
    Reply(body='{"choices": [{"message": {"content": "A shift lead earns between 44000 and'),
], ids=["false-quote", "number", "uncited", "invented-source", "refusal-with-text", "cut-off"])
def test_a_rejected_or_refused_draft_never_shows_text_the_caller_cannot_read(home, reply):
    service, server = fake_model_service.start()
    try:
        service.replies.append(reply)
        generator = OpenAICompatibleGenerator(base_url=service.url, model="m", retries=0)
        answer = ask(home, STAFF, "What salary does a shift lead earn a year?", generator)
    finally:
        server.shutdown()
    assert "44000" not in service.requests[0]["json"]["messages"][1]["content"]  # the model never saw it
    record = home.answers.get_answer("northpier", answer.answer_id)
    for shown in (answer.model_dump_json(), record.model_dump_json()):
        assert not any(secret in shown for secret in SECRET)
    assert answer.degraded or answer.refused  # said so, or refused


# The command, against the server as a process of its own


def test_eval_answers_through_a_model_server_process(tmp_path, monkeypatch, capsys):
    home = str(tmp_path / "home")
    for name, text, role in (("handbook.md", HANDBOOK, "staff"), ("salaries.md", SALARIES, "hr")):
        (tmp_path / name).write_text(text)
        assert main(["--home", home, "ingest", str(tmp_path / name), "--doc-id", name, "--tenant", "northpier",
                     "--allow-roles", role]) == 0
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"tenant": "northpier", "roles": ["staff"], **c}) + "\n" for c in CASES))
    log = tmp_path / "replies.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.model_server", "--port", "0",
                                "--fault-rate", "0.5", "--seed", "11", "--log", str(log)], stdout=subprocess.PIPE, text=True,
                               cwd=ROOT)
    try:
        url = process.stdout.readline().split(" at ")[1].split("/v1 ")[0]
        reports = {}
        monkeypatch.setenv("CITEWELL_QUERY_EXPANSION", "off")  # the replies logged are the answers' alone
        for kind, env in {
            "openai": {"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{url}/v1",
                       "CITEWELL_OPENAI_MODEL": MODEL_NAME},
            "bedrock": {"CITEWELL_GENERATOR": "bedrock", "CITEWELL_BEDROCK_MODEL_ID": MODEL_NAME,
                        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url, "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"},
        }.items():
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            capsys.readouterr()
            assert main(["--home", home, "eval-answers", str(questions), "--json"]) == 0
            reports[kind] = json.loads(capsys.readouterr().out)
    finally:
        process.terminate()
        process.wait(timeout=10)
    replies = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["api"] for r in replies} == {"chat", "converse"} and len(replies) == 2 * len(CASES)
    assert reports["openai"]["generator"] == f"openai-compatible:{MODEL_NAME}"
    assert reports["bedrock"]["generator"] == f"bedrock:{MODEL_NAME}"
    for kind, api in (("openai", "chat"), ("bedrock", "converse")):
        report, mine = reports[kind], [r for r in replies if r["api"] == api]
        outcomes = fault_outcomes(mine, CASES, report)
        assert sum(o["replies"] for o in outcomes.values()) == len(CASES)
        caught = sum(o["rejected"] + o["unusable"] for fault, o in outcomes.items() if fault not in ("none", "unwarranted_answer"))
        made = sum(r["fault"] not in (None, "unwarranted_answer") for r in mine)
        assert caught == made == report["overall"]["drafts_rejected"] + report["overall"]["generator_unavailable"]
        assert outcomes.get("none", {}).get("rejected", 0) == 0  # no faithful reply is rejected
        assert report["overall"]["forbidden_text"] == 0
    # Both APIs got the same prompts, so the same replies: the same evaluation.
    assert [r["fault"] for r in replies if r["api"] == "chat"] == [r["fault"] for r in replies if r["api"] == "converse"]
