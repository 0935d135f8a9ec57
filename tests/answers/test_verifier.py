"""The answer verifier's parts that hold with or without a fitted verifier shipped: what it
reads of a unit (its place, then its words), how a pair is cut to fit, and how the rerank
puts the verified units before the rest. (No verifier ships yet: see BENCHMARKS.md.)"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from citewell.answers.extractive.cross_encoder import MAX_TOKENS, MODEL_FILE, QUESTION_TOKENS, AnswerVerifier, unit_passage
from citewell.answers.extractive.features import RERANK_FEATURES
from citewell.answers.extractive.refusal import LogisticModel, reranked, shipped_model
from citewell.answers.extractive.units import units_of
from citewell.models.evidence import EvidenceItem, EvidenceSpan


def _item(text: str, document_id: str = "teamA/README.md", title: str = "Team A", section: tuple[str, ...] = ("Contacts",)) -> EvidenceItem:
    return EvidenceItem(ref="S1", document_id=document_id, revision="r1", title=title, section_path=list(section), text=text,
                        spans=[EvidenceSpan(chunk_id=f"{document_id}#0#0", section_path=list(section), start=0, end=len(text))],
                        rank=1)


def test_what_the_verifier_reads_of_a_unit_is_its_place_then_its_words():
    """Team A's README speaks for team A: the path and title lead, so a verifier can read them."""
    (lead,) = units_of(_item("The team lead is Mira Okafor."))
    assert unit_passage(lead) == "teamA/README.md > Team A > Contacts | The team lead is Mira Okafor."
    (other,) = units_of(_item("The team lead is Mira Okafor.", "teamB/README.md", "Team B"))
    assert unit_passage(other).startswith("teamB/README.md > Team B")
    (repeated,) = units_of(_item("Exit status 0 means success.", "dev/find.1", "find", ("find", "EXIT STATUS")))
    assert unit_passage(repeated) == "dev/find.1 > find > EXIT STATUS | Exit status 0 means success."  # a title repeated in the path once


def test_a_pair_is_cut_to_fit_the_unit_tail_first():
    verifier = AnswerVerifier(Path("unused.onnx"))  # encoding needs only the packaged tokenizer
    ids, mask, segments = verifier.encode("Who leads the billing team? " * 20, ["word " * 400, "Mira Okafor."])
    assert ids.shape == (2, MAX_TOKENS) and mask[0].all()
    assert ids[0, 0] == 101 and ids[0, QUESTION_TOKENS + 1] == 102 and ids[0, -1] == 102  # [CLS] question [SEP] unit [SEP]
    assert segments[0, : QUESTION_TOKENS + 2].sum() == 0 and segments[0, QUESTION_TOKENS + 2 :].all()
    short = int(mask[1].sum())
    assert short < MAX_TOKENS and not mask[1, short:].any() and not ids[1, short:].any()  # padded with [PAD], masked


def test_the_rerank_orders_the_verified_units_and_keeps_the_rest_below_them():
    base = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    logits = np.log(base / (1 - base))
    rerank = LogisticModel(features=RERANK_FEATURES, weights=[1.0, 2.0], bias=0.0)
    again = reranked(base, logits, np.array([0, 1, 2]), np.array([-3.0, 3.0, 0.0]), rerank)
    assert list(np.argsort(-again, kind="stable")) == [1, 2, 0, 3, 4]  # the verifier lifts the second over the first
    assert again[3] < again[:3].min() and again[3] > again[4]  # the unverified stay below, in their order


def test_answers_cached_under_one_verifier_are_not_served_under_another(tmp_path):
    """A generator handed a verifier (a benchmark's file, not the packaged one) keys its answers by
    that file when its model reranks, and never opens it when the model does not."""
    from citewell.answers.extractive.generator import ExtractiveGenerator
    from citewell.embedders.minilm import MiniLMEmbedder

    first, second = tmp_path / "first.onnx", tmp_path / "second.onnx"
    first.write_bytes(b"one verifier")
    second.write_bytes(b"another verifier")
    rerank = shipped_model().model_copy(update={"rerank": LogisticModel(features=RERANK_FEATURES, weights=[1.0, 1.0], bias=0.0)})
    embedder = MiniLMEmbedder()
    one = ExtractiveGenerator(embedder, model=rerank, verifier=AnswerVerifier(first))
    again = ExtractiveGenerator(embedder, model=rerank, verifier=AnswerVerifier(first))
    other = ExtractiveGenerator(embedder, model=rerank, verifier=AnswerVerifier(second))
    assert one.fingerprint == again.fingerprint != other.fingerprint
    plain = shipped_model().model_copy(update={"rerank": None})
    unread = ExtractiveGenerator(embedder, model=plain, verifier=AnswerVerifier(tmp_path / "absent.onnx"))
    assert unread.fingerprint == ExtractiveGenerator(embedder, model=plain).fingerprint


def test_no_rerank_ships_without_its_verifier():
    """The rerank model reads one verifier's logits: it ships with that file or not at all."""
    shipped = Path(str(resources.files("citewell.answers.extractive") / MODEL_FILE))
    assert (shipped_model().rerank is not None) == shipped.exists()


def test_discrimination_reads_only_the_first_units_the_verifier_would_read():
    """The side-by-side AUC is over the units a verifier would rerank (the first VERIFIED by the
    unit model), not every unit: a fact held by a fifth unit is no unit model's miss here."""
    pytest.importorskip("sklearn", reason="the fit's tools are the train extra's")
    from benchmarks.calibrate_refusal import Observed, Question, discrimination
    from citewell.answers.extractive.features import UNIT_FEATURES, UnitFeatures
    from citewell.answers.extractive.refusal import RefusalModel
    from citewell.models.identity import Identity

    def observed(cosines: list[float], holds: list[bool]) -> Observed:
        rows = [UnitFeatures(**dict.fromkeys(UNIT_FEATURES, 0.0) | {"cosine": c}) for c in cosines]
        question = Question(text=f"q{cosines}", identity=Identity(tenant="t", roles=frozenset({"r"})), facts=["x"],
                            answerable=True, source="squad", fit=False)
        return Observed(question, rows, holds, None, holds, [frozenset({i}) for i in range(len(rows))])

    model = RefusalModel(unit=LogisticModel(features=("cosine",), weights=[1.0], bias=0.0),
                         answer=LogisticModel(features=("best_unit",), weights=[1.0], bias=0.0))
    first = observed([0.9, 0.8, 0.7, 0.6, 0.5], [True, False, False, False, True])
    second = observed([0.9, 0.8, 0.1, 0.05], [False, True, False, False])
    figures = discrimination([([first, second, Observed(first.question, [], [], None, [], [])], model, None)])
    assert figures == {"units": 8, "holding": 2, "auc_unit_model": round(10 / 12, 4), "best_holds_unit_model": 1}


def test_the_unit_encoder_trains_on_the_units_own_text_even_under_a_title_holding_a_bar():
    """The tuned encoder scores what the answerer embeds, the unit's words: never its place."""
    from benchmarks.calibrate_refusal import Observed, Question
    from benchmarks.train_unit_encoder import unit_text
    from benchmarks.verifier_pairs import pairs
    from citewell.models.identity import Identity

    (unit,) = units_of(_item("Pass override=True to override existing variables.", "dev/README.md", "python-dotenv | PyPI"))
    passage = unit_passage(unit)
    question = Question(text="How do I make the .env file win?", identity=Identity(tenant="t", roles=frozenset({"dev"})),
                        facts=["override=True"], answerable=True, source="realdocs", fit=True)
    observed = Observed(question=question, unit_rows=[], unit_labels=[True], evidence=None, answer_labels=[True],
                        quoted=[frozenset({0})], passages=[passage], texts=[unit.text])
    (row,) = pairs([observed])
    assert unit_text(row) == "Pass override=True to override existing variables." and row["label"] == 1
    older = {"passage": "dev/README.md > python-dotenv > Contacts | Pass override=True to override existing variables."}
    assert unit_text(older) == "Pass override=True to override existing variables."  # pairs written before the text was kept
