"""The local default: quote the units that answer the question, or refuse.

It needs no model service. Evidence is cut into units (records, sentences, list items); each
unit is scored against the question by a fitted model over its meaning (the same embedding
model as the index), its weighted term coverage, the codes and numbers the question names,
and whether it holds the kind of answer the question asks for (a number, a date, a name, a
code, a list of steps). A second fitted model decides whether the best unit answers at all.
The answer states the direct answer first when one can be read off the unit (a record's
field, the one number or date it holds), then quotes the unit (or the whole list) with its
``[Sn]``. A unit is scored and quoted with its companion, the sentence or heading that holds
the kind of answer it lacks; a "who" answer that names a team is followed to the person the
evidence names for it. A declined answer whose best unit is near enough (the model's second
operating point) and shares a word of the question quotes that unit alone, as not confirmed.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citewell.answers import conditions
from citewell.answers.extractive.refusal import (
    VERIFIED,
    LogisticModel,
    RefusalModel,
    coverage,
    reranked,
    shipped_model,
    term_weights,
)
from citewell.answers.extractive.unit_encoder import shipped_unit_encoder
from citewell.answers.extractive.units import (
    DATE,
    FILLABLE,
    MONEY,
    NUMBER,
    PERSON,
    SERIES,
    Support,
    Unit,
    Wants,
    asks_what_is_not,
    companions,
    completion,
    field_names,
    final_ask,
    identifiers,
    missing_share,
    names_a_sibling,
    negates,
    parts,
    quotes_of,
    run_around,
    specific_terms,
    stems,
    units_of,
    wants,
)
from citewell.answers.extractive.verifier import shipped_verifier, unit_passage
from citewell.errors import EmbedderUnavailable, GeneratorUnavailable
from citewell.keys import units_identity
from citewell.models import Draft, EvidenceItem, Outcome, sha256_text
from citewell.ports import Embedder, EmbeddingCache
from citewell.terms import FUNCTION_WORDS

MAX_UNITS = 2
MAX_RUN = 12  # list items quoted at most
_NAME_FIELDS = frozenset({"name", "contact", "owner", "person"})  # stems of the fields that name someone
_ORDINAL = re.compile(r"^\d+[.)]\s+")  # a list item's own number: the answer numbers the items again


class UnitEmbeddings:
    """Unit vectors, cached per revision: the same passages come back for many questions, so
    each unit is embedded once. They come from the packaged unit encoder where it ships
    (``unit_encoder.py``), else from the index's ``embedder``; either way they are kept in the
    namespace of the index's embedder and the revision (``units_identity``), which deleting or
    replacing the revision purges, each under its text and the encoder that embedded it."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None, encoder: Embedder | None = None) -> None:
        self.embedder = embedder
        self.encoder = encoder or shipped_unit_encoder() or embedder
        self.cache = cache
        self.questions: dict[str, np.ndarray] = {}  # vectors the search already computed, by question

    def _key(self, text: str) -> str:
        return sha256_text(text) if self.encoder is self.embedder else sha256_text(f"{self.encoder.identity}\n{text}")

    def cached(self, question: str, units: Sequence[Unit]) -> tuple[np.ndarray | None, dict[int, np.ndarray]]:
        """The question's vector if the search computed it with the same model, and the vectors
        of the units (by position) embedded for an earlier question."""
        query = self.questions.get(question) if self.encoder is self.embedder else None
        if self.cache is None:
            return query, {}
        keys = [(u.item.revision, self._key(u.text)) for u in units]
        found: dict[tuple[str, str], np.ndarray] = {}
        for revision in sorted({r for r, _ in keys}):
            hashes = {h for r, h in keys if r == revision}
            cached = self.cache.get_embeddings(units_identity(self.embedder.identity, revision), hashes)
            found.update({(revision, h): v for h, v in cached.items()})
        return query, {i: found[k] for i, k in enumerate(keys) if k in found}

    def compute(self, question: str, query: np.ndarray | None, units: Sequence[Unit]) -> tuple[np.ndarray, np.ndarray]:
        """Embeds ``units`` (and the question, when ``query`` is None) in one call."""
        asked = [] if query is not None else [question]
        if query is not None and not units:
            return query, np.zeros((0, len(query)), dtype=np.float32)
        vectors = self.encoder.embed([*asked, *(u.text for u in units)])
        return (query if query is not None else vectors[0]), vectors[len(asked):]

    def keep(self, units: Sequence[Unit], vectors: np.ndarray) -> None:
        """Caches the units' vectors for later questions: one write an answer, whatever the
        rounds it embedded them in."""
        if self.cache is None or not len(units):
            return
        by_revision: dict[str, dict[str, np.ndarray]] = {}
        for unit, vector in zip(units, vectors):
            by_revision.setdefault(unit.item.revision, {})[self._key(unit.text)] = vector
        for revision, vectors_of in sorted(by_revision.items()):
            self.cache.put_embeddings(units_identity(self.embedder.identity, revision), vectors_of)


def _holds_wanted(unit: Unit, wanted: set[Wants], units: list[Unit], question: str = "") -> bool:
    for kind in wanted:
        if kind in (Wants.STEPS, Wants.LIST):
            if len(run_around(units, unit)) > 1:
                return True
            if kind is Wants.LIST and not unit.record and SERIES.search(unit.text):  # the list is in the sentence
                return True
        elif unit.holds(kind, question):
            return True
    return False


def score_support(
    embed: UnitEmbeddings, question: str, evidence: Sequence[EvidenceItem], model: RefusalModel | None = None,
    *, leading: int = 1, every_unit: bool = False,
) -> Support | None:
    """The evidence's units scored against the question. Unless ``every_unit``, only the
    ``CANDIDATES`` that could rank among the first ``leading``, or be the best rival of the
    first, are embedded (see ``_cosines``); the others are left out of ``Support.units``, which
    is then ranked exactly as far as the answer reads it."""
    model = model or shipped_model()
    units = [u for item in evidence for u in units_of(item)]
    if not units:
        return None
    texts = [u.text for u in units]
    terms = [stems(t) for t in texts]
    weights = term_weights(stems(question), terms)
    ask = final_ask(question)
    ask_weights = term_weights(stems(ask), terms) if ask else None
    named = identifiers(question)
    named = {n for n in named if not any(n != other and n in other for other in named)}  # "4031" of "tf-4031" is that code
    wanted = wants(question)
    contexts: dict[tuple[tuple[int, str], str, int], tuple[set[str], str]] = {}  # (chunk, asked, companion)
    specific = specific_terms(question)
    negated = asks_what_is_not(question)
    rows, arounds = [], []
    # A unit is scored with the sentence or heading its answer would quote beside it.
    beside = companions(units, wanted, question)
    for unit, companion, unit_terms, text in zip(units, beside, terms, texts):
        lowered = text.lower()
        matches = companion is not None or _holds_wanted(unit, wanted, units, question)
        span = unit.item.span_at(unit.start)
        where = (id(unit.item), span.chunk_id)
        around = (where, unit.asked, companion.start if companion else -1)
        if around not in contexts:  # the title and headings it sits under, the question it follows
            heading = " ".join([unit.item.title, *span.section_path, unit.asked, companion.text if companion else ""])
            contexts[around] = (stems(heading), heading.lower())
        context_terms, context_text = contexts[around]
        arounds.append(around)
        around_terms = unit_terms | context_terms
        joint = coverage(weights, around_terms)
        rows.append({
            "cosine": 0.0,  # set by _cosines
            "coverage": coverage(weights, unit_terms),
            "context_coverage": coverage(weights, context_terms),
            "joint_coverage": joint,
            # how much more of a question's set-out situation than of its final ask the unit covers: the
            # situation often holds the referent ("xsltproc returned 4."), the ask little ("What does that
            # code mean?"); the fit weighs it for a unit, not against it
            "ask_gap": max(0.0, joint - coverage(ask_weights, around_terms)) if ask_weights else 0.0,
            "item_rank": 1.0 / unit.item.rank,
            # "14" is not in "2009-02-14"; a release's items hold its number in their heading ("Nettle 3.8")
            "identifiers_found": 1.0 - missing_share(named, f"{lowered} {context_text}"),
            "missing_specific": missing_share(specific, f"{lowered} {context_text}"),
            "type_match": 1.0 if wanted and matches else 0.0,
            "type_mismatch": 1.0 if wanted and not matches else 0.0,
            # a flag, a variable or a setting the question does not name, for "which option ...?"
            "code_match": 1.0 if Wants.CODE in wanted and any(
                u.holds(Wants.CODE, question) for u in (unit, companion) if u is not None) else 0.0,
            "record": 1.0 if unit.record else 0.0,
            "names_field": 1.0 if unit.record and names_a_field(question, text) else 0.0,
            "names_sibling": 1.0 if names_a_sibling(named, lowered) else 0.0,
            "heading": 1.0 if unit.heading else 0.0,
            "direct": 1.0 if direct_answer(question, companion or unit, frozenset(wanted)) else 0.0,
            # "Which city did the treaty not name?" is not answered by the sentence naming the cities it did.
            "negation_missing": 1.0 if negated and not negates(f"{text} {companion.text if companion else ''}") else 0.0,
        })
    # What an answer built on each unit quotes (its list, companion or neighbouring sentence),
    # and how much of the question that covers.
    position = {id(u): i for i, u in enumerate(units)}
    quoting: list[frozenset[int]] = []
    for unit, companion, row, (context_terms, _) in zip(units, beside, rows, (contexts[a] for a in arounds)):
        quoted = [position[id(u)] for u in _quoted(question, unit, row, frozenset(wanted), units, companion)]
        row["answer_coverage"] = coverage(weights, context_terms.union(*(terms[i] for i in quoted)))
        quoting.append(frozenset(quoted))
    asked_stems = frozenset(stems(question))
    columns = record_columns(units) if asked_stems else {}
    alone = [answers_alone(unit, units, frozenset(wanted), asked_stems, columns, question) for unit in units]
    if not any(alone):
        return None
    # The verifier reads the first VERIFIED units again: those must be ranked exactly.
    leading = max(leading, VERIFIED) if model.rerank is not None else leading
    cosines = _cosines(embed, question, units, rows, quoting, model.unit, leading, every_unit, alone)
    scored = [i for i in range(len(units)) if alone[i] and not np.isnan(cosines[i])]
    for i in scored:
        rows[i]["cosine"] = float(cosines[i])
    probabilities = np.array([model.unit.probability(rows[i]) for i in scored])
    if model.rerank is not None:
        probabilities = _verify(question, [units[i] for i in scored], [rows[i] for i in scored], probabilities, model)
    ranking = np.argsort(-probabilities, kind="stable")
    order = [scored[int(j)] for j in ranking]
    rank_of = {i: r for r, i in enumerate(order)}
    quoted_ranks = [frozenset(rank_of[j] for j in quoting[i] if j in rank_of) for i in order]
    everything = set().union(*terms, *(t for t, _ in contexts.values()))
    covered = {"evidence_coverage": coverage(weights, set().union(*terms)), "absent_terms": 1.0 - coverage(weights, everything)}
    ranked_rows = [rows[i] for i in order]
    ranked_probabilities = probabilities[ranking]
    features = answer_features(ranked_rows, ranked_probabilities, covered, quoted_ranks)
    return Support(
        in_order=units, units=[units[i] for i in order], probabilities=ranked_probabilities,
        unit_features=ranked_rows, features=features, wanted=frozenset(wanted), quoted=quoted_ranks,
        complete=len(scored) == sum(alone),
    )


def _verify(question: str, units: list[Unit], rows: list[dict[str, float]], probabilities: np.ndarray,
            model: RefusalModel) -> np.ndarray:
    """The units' probabilities once the answer verifier has read the first ``VERIFIED`` of
    them with the question (``reranked``); each verified row gets its ``verifier`` logit."""
    assert model.rerank is not None
    top = np.argsort(-probabilities, kind="stable")[:VERIFIED]
    verified = shipped_verifier().score(question, [unit_passage(units[int(i)]) for i in top])
    for i, v in zip(top, verified):
        rows[int(i)]["verifier"] = float(v)
    logits = np.array([model.unit.logit(row) for row in rows])
    return reranked(probabilities, logits, top, verified, model.rerank)


ROUND = 8  # units embedded at a time, best bound first
# The units an answer may be built on: those that score best without their cosine. A cold ask
# embeds at most this many, and cached or not the same ones are ranked. realdocs-tune, the answer
# set and SQuAD answer alike with 12 and with all of them (8 loses one of realdocs-tune's); the
# cost is linear in it.
CANDIDATES = 12


def _cosines(embed: UnitEmbeddings, question: str, units: list[Unit], rows: list[dict[str, float]],
             quoting: list[frozenset[int]], model: LogisticModel, leading: int, every_unit: bool,
             alone: list[bool]) -> np.ndarray:
    """Each unit's cosine to the question, NaN for a unit left unembedded. Embedding the
    evidence's sentences is most of what an answer costs, and most of them cannot matter. Unless
    ``every_unit``, only the ``CANDIDATES`` units that score best without their cosine are
    candidates. The unit model is linear in the cosine, which lies in [-1, 1], so a candidate's
    score is bounded before it is embedded. Candidates are embedded ``ROUND`` at a time, best bound
    first, and only those whose bound reaches the ``leading``-th score or, unless the first
    unit's answer quotes it, the best rival's (what the answer model reads), until none is left;
    the ranking read from the candidates embedded equals theirs in full."""
    weight = model.weights[model.features.index("cosine")]
    partial = np.array([model.logit(row) for row in rows])  # every row's cosine is still 0
    # a unit that cannot answer alone is never ranked
    candidates = sorted((i for i in range(len(units)) if alone[i]), key=lambda i: (-partial[i], i))
    if not every_unit:
        candidates = candidates[:CANDIDATES]
    query, cached = embed.cached(question, [units[i] for i in candidates])  # only the candidates' vectors are read
    known = {candidates[j]: vector for j, vector in cached.items()}
    pending = [i for i in candidates if i not in known]
    first = len(pending) if every_unit else (ROUND if query is None or not known else 0)  # the question rides along
    taken, pending = pending[:first], pending[first:]
    query, vectors = embed.compute(question, query, [units[i] for i in taken])
    embedded, fresh = list(taken), [vectors]
    cosines = np.full(len(units), np.nan)
    if known:
        cosines[list(known)] = np.stack(list(known.values())) @ query
    cosines[taken] = vectors @ query
    while pending:
        blocking = _blocking(partial + weight * np.nan_to_num(cosines), cosines, pending,
                             [partial[i] + abs(weight) for i in pending], quoting, leading)
        if not blocking:
            break
        taken = blocking[:ROUND]
        embedding = set(taken)
        pending = [i for i in pending if i not in embedding]
        query, vectors = embed.compute(question, query, [units[i] for i in taken])
        embedded += taken
        fresh.append(vectors)
        cosines[taken] = vectors @ query
    embed.keep([units[i] for i in embedded], np.concatenate(fresh))
    return cosines


def _blocking(scores: np.ndarray, cosines: np.ndarray, pending: list[int], bounds: list[float],
              quoting: list[frozenset[int]], leading: int) -> list[int]:
    """The units still to embed (bounded by ``bounds``, in ``pending``'s order) that could rank
    among the first ``leading`` or be the first unit's best rival (the best unit its answer
    does not quote), as far as the units scored so far tell; none left means the ranking is
    settled."""
    scored = sorted((i for i in range(len(scores)) if not np.isnan(cosines[i])), key=lambda i: (-scores[i], i))
    if len(scored) < leading:
        return pending
    lead = scores[scored[leading - 1]]
    rival = next((i for i in scored[1:] if i not in quoting[scored[0]]), None)
    floor = -np.inf if rival is None else scores[rival]
    return [i for i, bound in zip(pending, bounds)
            if bound >= lead or (i not in quoting[scored[0]] and bound >= floor)]


_CLOSED = re.compile(r"[.!?:;)\]\"'`»”]$")


def answers_alone(unit: Unit, units: list[Unit], wanted: frozenset[Wants], asked: frozenset[str] = frozenset(),
                  columns: dict[int, _Columns] | None = None, question: str = "") -> bool:
    """Whether an answer may be built on ``unit``: never a heading alone (unless it heads a list,
    or holds the kind asked for, as a release's date), a bare term, a sentence cut off before
    its end ("... can be specified to tests as"), a lead-in without the list it introduces, or a
    table row without the column the question asks for (``asked``: the question's stems) when
    other rows have it (``columns``: ``record_columns(units)``, computed once for all of them).
    Such units still serve as context and companions. A sentence that ends on a colon but names
    what was asked (``question``) is an answer before its example ("... use path.win32:")."""
    if unit.record:
        return not (asked and _lacks_asked_field(unit, units, asked, record_columns(units) if columns is None else columns)
                    or asked and _reverses(unit, units, asked, question))
    named = not unit.heading and any(unit.holds(k, question) for k in wanted & FILLABLE - {Wants.DEFAULT})
    if unit.heading or (unit.text.endswith(":") and not named):
        intro, run = _list_at(units, unit)
        return intro is unit or (unit.heading and any(unit.holds(k) for k in wanted & FILLABLE))
    words = unit.text.split()
    if len(words) < 3 and len(run_around(units, unit)) < 2:
        return False
    last = words[-1].lower() if words else ""
    return bool(_CLOSED.search(unit.text)) or last not in FUNCTION_WORDS


# A record whose value opens by denying ("--no-ignore-case: Do not ignore case distinctions"),
# and the words of a question that may be asking for such a one ("turns off", "cancel", "without").
_DENIES = re.compile(r"^(?:do not|don't|does not|doesn't|never|not)\b", re.I)
_UNDOES = re.compile(r"\b(?:off|disabl\w*|cancel\w*|stop\w*|prevent\w*|undo\w*|"
                     r"without|overrid\w*|revers\w*|opposite|default)\b", re.I)


def _reverses(unit: Unit, units: list[Unit], asked: frozenset[str], question: str) -> bool:
    """A record that says the opposite of what is asked, beside one that says it: "Which grep
    option ignores case distinctions?" is answered by ``-i, --ignore-case``, never by
    ``--no-ignore-case`` ("Do not ignore case distinctions"), which shares every word of it."""
    if not _denies(unit) or negates(question) or _UNDOES.search(question):
        return False
    mine = len(stems(unit.text) & asked)
    return any(u.record and u.item is unit.item and u is not unit and len(stems(u.text) & asked) >= mine
               and not _denies(u) for u in units)


def _denies(record: Unit) -> bool:
    return any(_DENIES.match(field.partition(": ")[2].strip()) for field in record.text.split("; "))


@dataclass(frozen=True)
class _Columns:
    names: frozenset[str]  # a record's field names
    stems: frozenset[str]  # their stems
    section: tuple[str, ...]  # the section it is in (a sheet is one)


def record_columns(units: list[Unit]) -> dict[int, _Columns]:
    """Each record's columns, by ``id`` of its unit: what ``_lacks_asked_field`` compares rows by."""
    columns = {}
    for unit in units:
        if unit.record:
            names = frozenset(field_names(unit))
            columns[id(unit)] = _Columns(names, frozenset(s for name in names for s in stems(name)),
                                         tuple(unit.item.span_at(unit.start).section_path))
    return columns


def _lacks_asked_field(unit: Unit, units: list[Unit], asked: frozenset[str], columns: dict[int, _Columns]) -> bool:
    """A row of a table whose other rows have a column the question names, and it has not
    ("When was Debian 15 released?": its row has no release date yet). Other rows are those of
    the same table: the same section (a sheet is one), sharing most of this row's columns."""
    mine = columns[id(unit)]
    others = {stem for u in units if u.record and u.item is unit.item and u is not unit
              and (theirs := columns[id(u)]).section == mine.section and 2 * len(mine.names & theirs.names) >= len(mine.names)
              for stem in theirs.stems}
    return bool((others - mine.stems) & asked)


def answer_features(rows: Sequence[dict[str, float]], probabilities: np.ndarray, evidence: dict[str, float],
                    quoted: Sequence[frozenset[int]]) -> dict[str, float]:
    """What the answer model reads: the best unit by the unit model, its lead over the best unit
    its answer does not quote (the next sentence or list item it quotes beside it is no rival),
    and how much of the question the evidence as a whole covers (``evidence``:
    ``evidence_coverage``, ``absent_terms``). ``quoted`` holds, for each row, the rows an answer
    built on it quotes. The fit (``calibrate_refusal``) computes its rows with this function too."""
    first, rival = best_and_rival(probabilities, quoted)
    best = rows[first]
    top = float(probabilities[first])
    return {
        "best_unit": top,
        "margin": top - float(probabilities[rival]) if rival is not None else top,
        "best_cosine": best["cosine"],
        "best_coverage": best["coverage"],
        "best_context_coverage": best["context_coverage"],
        "best_joint_coverage": best["joint_coverage"],
        "evidence_coverage": evidence["evidence_coverage"],
        "absent_terms": evidence["absent_terms"],
        "identifiers_found": best["identifiers_found"],
        "missing_specific": best["missing_specific"],
        "type_mismatch": best["type_mismatch"],
        "top_lane_agreement": 1.0 if best["item_rank"] == 1.0 else 0.0,
        "direct": best["direct"],
        "answer_coverage": best["answer_coverage"],
        "negation_missing": best["negation_missing"],
        "best_verifier": best.get("verifier", 0.0),  # absent without a rerank model
        "asks_kind": best["type_match"] + best["type_mismatch"],  # one of them is 1 when the question asks for a kind
        "type_match": best["type_match"],
        "mismatch_coverage": best["type_mismatch"] * best["joint_coverage"],
        "record": best["record"],
        "names_field": best["names_field"],
        "names_sibling": best["names_sibling"],
        "code_match": best["code_match"],
        "ask_gap": best["ask_gap"],
    }


_DIGITS = re.compile(r"\d[\d,.]*\d|\d")


def best_and_rival(probabilities: np.ndarray, quoted: Sequence[frozenset[int]]) -> tuple[int, int | None]:
    """The best unit by ``probabilities`` and its rival, the best unit its answer does not quote
    (``quoted``: for each unit, the units an answer built on it quotes), as indexes."""
    order = np.argsort(-probabilities, kind="stable")
    best = int(order[0])
    return best, next((int(i) for i in order[1:] if int(i) not in quoted[best]), None)


def runner_up_of(rows: Sequence[dict[str, float]], probabilities: np.ndarray, quoted: Sequence[frozenset[int]],
                 model: RefusalModel) -> int | None:
    """The unit an answer quotes beside the best (its index), or None: the rival, which the
    ranking settles exactly, when the model calls the two close and the best's quote (the best
    unit with its companion) lacks the kind asked for (``RefusalModel.quotes_runner_up``). The
    fit (``calibrate_refusal``) labels answers with this function too."""
    best, rival = best_and_rival(probabilities, quoted)
    if rival is None or not model.quotes_runner_up(float(probabilities[best]), float(probabilities[rival]),
                                                   rows[best]["type_match"] == 1.0):
        return None
    return rival


def runner_up_quote(question: str, support: Support, rank: int) -> list[Unit]:
    """What an answer quotes of its runner-up: the unit with the sentence or heading that holds
    what it lacks, in document order (never a whole list: the best's answer leads)."""
    unit = support.units[rank]
    companion = completion(support.in_order, unit, set(support.wanted), question)
    return sorted([unit, companion], key=lambda u: u.start) if companion else [unit]


def direct_answer(question: str, unit: Unit, wanted: frozenset[Wants]) -> str | None:
    """What the answer is, in a few words, when the unit says it plainly: the record field the
    question names, or the only number, date or name of the kind asked for."""
    if unit.record:
        asked = stems(question)
        fields = [(stems(name), value.strip()) for name, _, value in (f.partition(": ") for f in unit.text.split("; "))]
        # the field the question names most of ("night shift supplement", not "field allowance per shift")
        for named, value in sorted(fields, key=lambda f: -len(f[0] & asked)):
            if named & asked and value and not _named_in(value, question):
                return value
        for kind, pattern in ((Wants.DATE, DATE), (Wants.MONEY, MONEY), (Wants.NUMBER, NUMBER)):
            valued = [value for _, value in fields if kind in wanted and value and pattern.search(value)
                      and not _named_in(value, question)]
            if len(valued) == 1:  # "how long ...?" is answered by the row's one period, whatever its column says
                return valued[0]
        if Wants.PERSON in wanted:  # "who ...?" is answered by the row's name
            return next((value for named, value in fields if named & _NAME_FIELDS and value), None)
        return None
    named = set(_DIGITS.findall(question))  # "53" in "the 53-bit limit" is no answer to it
    for kind, pattern in ((Wants.DATE, DATE), (Wants.MONEY, MONEY), (Wants.NUMBER, NUMBER), (Wants.PERSON, PERSON)):
        if kind in wanted:
            found = {m.group(0).strip() for m in pattern.finditer(unit.text)} - {"", *re.findall(r"\S+", question)}
            found = {f for f in found if not set(_DIGITS.findall(f)) & named}
            if len(found) == 1:
                return found.pop()
    return None


# "status 9", "returned 4", "exit code 2": the words that make a lone digit a value the question names.
_STATUS_BEFORE = r"(?:(?<=[%$-])|\b(?:status|code|value|returned|returns|return|exited|exits|errno|number) )"


def names_a_field(question: str, record: str) -> bool:
    """Whether the question names one of the record's values whole: the row it asks about
    ("What does the fstab keyword 'defaults' stand for?" names the row ``term: defaults``; "%x"
    names ``term: x``; "error number 111" names ``Number: 111``; "exited with status 9" names
    ``exit value: 9``). A value that is a function word, or a single character the question does
    not write with a sign before it (or, for a digit, after a word for a status), names nothing."""
    asked = question.lower()
    for field in record.split("; "):
        value = field.partition(": ")[2].strip().lower()
        for form in {value, *(part.strip() for part in value.split(","))}:
            form = form.strip("'\"`=")
            if not form or form in FUNCTION_WORDS or len(form) > 60:
                continue
            before = (_STATUS_BEFORE if form.isdigit() else r"(?<=[%$-])") if len(form) == 1 else r"(?<![\w-])"
            if re.search(rf"{before}{re.escape(form)}(?![\w-])", asked):
                return True
    return False


def _named_in(value: str, question: str) -> bool:
    """Whether the question already names the value, or one of its comma-separated forms: that
    field is the record's key ("What does --dry-run do?" is not answered by "-n, --dry-run")."""
    asked = question.lower()
    return value.lower() in asked or any(
        len(part) > 1 and re.search(rf"(?<![\w-]){re.escape(part)}(?![\w-])", asked)
        for part in (p.strip().lower() for p in value.split(",")))


def _singles_out(question: str, row: Unit, rows: list[Unit]) -> bool:
    """Whether the question names a code or number that this row holds and the others do not,
    or words that this row holds and at most one other does ("no exact equivalent of plain C
    char" is the one definition whose note says so, not the whole list of type descriptors)."""
    if any(n in row.text.lower() and not all(n in r.text.lower() for r in rows) for n in identifiers(question)):
        return True
    if len(rows) < 4:
        return False
    mine = stems(question) & stems(row.text)
    held = [stems(r.text) for r in rows] if mine else []
    return any(sum(word in words for words in held) <= 2 for word in mine)


def best_of_each(
    embed: UnitEmbeddings, asks: list[str], evidence: Sequence[EvidenceItem], model: RefusalModel,
) -> tuple[list[Unit], bool]:
    """The best unit for each ask of a question, in the order asked, each once; and whether the
    answer model would answer every ask on its own."""
    chosen: list[Unit] = []
    every = True
    for ask in asks:
        support = score_support(embed, ask, evidence, model, leading=len(chosen) + 1)
        if support is None:
            return chosen, False
        every = every and model.answers(support.features)
        fresh = [u for u in support.units[: len(chosen) + 1] if all(u.text != c.text for c in chosen)]
        if not fresh and not support.complete:  # the first units repeat what is chosen: rank them all
            support = score_support(embed, ask, evidence, model, every_unit=True) or support
            fresh = [u for u in support.units if all(u.text != c.text for c in chosen)]
        chosen.extend(fresh[:1])
    return chosen, every


ANSWERS_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def answering_code(package: Path = ANSWERS_PACKAGE) -> str:
    """A digest of the answering package's source: an upgrade that changes how answers are made
    must not serve answers cached before it, even with the same fitted model."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None, model: RefusalModel | None = None,
                 encoder: Embedder | None = None) -> None:
        self.embed = UnitEmbeddings(embedder, cache, encoder)
        self.model = model or shipped_model()
        # Cached answers are keyed by it: neither a refitted model nor changed code serves old answers.
        self.fingerprint = f"{sha256_text(self.model.model_dump_json())[:12]}:{answering_code()}:{self.embed.encoder.identity}"

    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        try:  # the second hop of a "who" answer (``_who_is``) reads the whole ranking
            support = score_support(self.embed, question, evidence, self.model, every_unit=Wants.PERSON in wants(question))
        except EmbedderUnavailable as error:
            raise GeneratorUnavailable(f"sentences cannot be scored: {error.message}") from error
        if support is None:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        asks = parts(question)
        each, every = best_of_each(self.embed, asks, evidence, self.model) if len(asks) > 1 else ([], False)
        if not (self.model.answers(support.features) or every):  # the whole question, or each of its asks
            return self._nearest(question, evidence, support)
        if len(asks) == 1 and (by_condition := conditions.answer(question, support)) is not None:
            return by_condition  # one answer per condition the question leaves open, or the one it names
        best = support.units[0]
        intro, run = list_of(question, support, 0)
        if len(run) > 1:
            quote = best.item.text[(intro or run[0]).start : run[-1].end]
            listed = "\n".join(f"{n}. {_ORDINAL.sub('', u.text)}" for n, u in enumerate(run, start=1))
            opening = f"{intro.text}\n" if intro else ""
            return Draft(text=f"{opening}{listed} [{best.item.ref}]", refused=False, outcome=Outcome.ANSWERED,
                         quotes={best.item.ref: quote})
        companion = completion(support.in_order, best, set(support.wanted), question)
        if len(asks) > 1 and not companion:  # two asks: the best unit of each, quoted in the order asked
            chosen, direct = each[:MAX_UNITS] or [best], None
        else:  # one ask, or two that the best unit and the sentence or heading it needs answer together
            lead = None if companion else lead_in(support.in_order, best)
            near = None if companion or lead else neighbour(question, support.in_order, best)
            beside = companion or lead or near
            chosen = sorted([best, *([beside] if beside else [])], key=lambda u: u.start)
            direct = None if near else direct_answer(question, companion or best, support.wanted)
            if direct and Wants.PERSON in support.wanted and not best.record:
                hop = _who_is(direct, chosen, support.units)
                if hop is not None:  # "People Operations" approves it; the directory says who that is
                    direct, chosen = hop[0], [*chosen, hop[1]]
        rank = runner_up_of(support.unit_features, support.probabilities, support.quoted, self.model) if len(asks) == 1 else None
        runner_up = runner_up_quote(question, support, rank) if rank is not None else []
        second = [u for u in runner_up if all(u is not c for c in chosen)]
        if direct and (_completes(question, best, second) if companion is None else _completes(question, companion, [best])):
            direct = None  # the value's sentence lacks what the question asks of, and another quoted holds it
        if direct and best.record and chosen == [best] and not second:  # the row is the quote beneath: its field once
            return Draft(text=f"{direct} [{best.item.ref}]", refused=False, outcome=Outcome.ANSWERED, quotes=quotes_of(chosen))
        pieces = [direct if direct.endswith((".", "!", "?")) else f"{direct}."] if direct else []
        pieces += [f"{unit.text} [{unit.item.ref}]" for unit in [*chosen, *second]]
        return Draft(text=" ".join(pieces), refused=False, outcome=Outcome.ANSWERED, quotes=quotes_of([*chosen, *second]))

    def nearest(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        """What came nearest, never an answer: the draft a declined answer gives (``unconfirmed``
        or ``not_found``), for a model generator that refused. Raises GeneratorUnavailable."""
        try:
            support = score_support(self.embed, question, evidence, self.model)
        except EmbedderUnavailable as error:
            raise GeneratorUnavailable(f"sentences cannot be scored: {error.message}") from error
        if support is None:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        return self._nearest(question, evidence, support)

    def _nearest(self, question: str, evidence: Sequence[EvidenceItem], support: Support) -> Draft:
        """The best unit that is not a heading, with the companion its answer would quote,
        quoted verbatim as not confirmed; ``not_found`` when the model puts it below its second
        operating point or it holds none of the question's words but its document's name, whatever
        the model says."""
        if not self.model.relates(support.features):
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        if support.units[0].heading and not support.complete:  # the ranking below the first is settled only in part
            support = score_support(self.embed, question, evidence, self.model, every_unit=True) or support
        rank = next((r for r, u in enumerate(support.units) if not u.heading), None)
        if rank is None:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        best = support.units[rank]
        companion = completion(support.in_order, best, set(support.wanted), question) or lead_in(support.in_order, best)
        chosen = sorted([best, companion], key=lambda u: u.start) if companion else [best]
        # A word shared only through the document's name ("Northpier" in Northpier's handbook) says
        # the passage is about the document, not about what was asked.
        named = stems(" ".join(u.item.title for u in chosen))
        if not (stems(question) & stems(" ".join(u.text for u in chosen))) - named:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        text = " ".join(f"{unit.text} [{unit.item.ref}]" for unit in chosen)
        return Draft(text=text, refused=True, outcome=Outcome.UNCONFIRMED, quotes=quotes_of(chosen))


def list_of(question: str, support: Support, rank: int) -> tuple[Unit | None, list[Unit]]:
    """The list an answer built on the unit at ``rank`` quotes, with the unit that introduces it, if any."""
    return _list_for(question, support.units[rank], support.unit_features[rank], support.wanted, support.in_order)


def _list_for(
    question: str, unit: Unit, row: dict[str, float], wanted: frozenset[Wants], in_order: list[Unit]
) -> tuple[Unit | None, list[Unit]]:
    """The list an answer built on ``unit`` quotes, with the unit that introduces it, if any; a
    run of one unit is no list. A question wants a list when it asks for steps or several
    things, when it is about the unit's section rather than the unit ("What was added in
    Tallyforge 5.4?": the section's headings hold more of it than the unit does), or when the
    unit is a heading (it answers no "what ...?" by itself, only by what it heads)."""
    single = bool(wanted & FILLABLE)
    listing = (bool(wanted & {Wants.STEPS, Wants.LIST})
               or (not single and not unit.asked and row["context_coverage"] > row["coverage"])  # a FAQ's question is no section
               or (unit.heading and not single)
               or unit.text.rstrip().endswith(":"))  # a lead-in says nothing without what it leads in
    intro, run = _list_at(in_order, unit) if listing else (None, [unit])
    if unit.record and (Wants.LIST not in wanted or _singles_out(question, unit, run)):
        return None, [unit]  # the rows of a table answer "what are the budgets?", not "what should I do for E1027?"
    return intro, run[:MAX_RUN]


def quoted_by(question: str, support: Support, rank: int) -> list[Unit]:
    """What an answer built on the unit at ``rank`` quotes before any second hop: its list, or
    the unit with the sentence or heading that holds what it lacks, or with the neighbouring
    sentence that holds the rest of the question. The answer model's fit labels an answer
    right when these hold a gold fact."""
    unit = support.units[rank]
    companion = completion(support.in_order, unit, set(support.wanted), question)
    return _quoted(question, unit, support.unit_features[rank], support.wanted, support.in_order, companion)


def _quoted(question: str, unit: Unit, row: dict[str, float], wanted: frozenset[Wants], in_order: list[Unit],
            companion: Unit | None) -> list[Unit]:
    intro, run = _list_for(question, unit, row, wanted, in_order)
    if len(run) > 1:
        return [intro, *run] if intro else run
    beside = companion or lead_in(in_order, unit) or neighbour(question, in_order, unit)
    return sorted([unit, beside], key=lambda u: u.start) if beside else [unit]


def _completes(question: str, valued: Unit, others: list[Unit]) -> bool:
    """Whether a sentence quoted beside ``valued`` holds words of the question that ``valued``, its
    title and headings lack: then a value read off ``valued`` may be a sibling's ("27 days" is
    full-time staff's, and "Part-time staff receive leave pro rata" is what was asked), and the
    sentences are the answer, not the value."""
    span = valued.item.span_at(valued.start)
    lacking = stems(question) - stems(" ".join([valued.text, valued.item.title, *span.section_path, valued.asked]))
    return any(stems(u.text) & lacking for u in others)


def lead_in(units: list[Unit], item: Unit) -> Unit | None:
    """The sentence ending in a colon that introduces the list ``item`` is one of ("... with the
    exception that the following are disallowed:"): an item quoted alone may say the opposite
    of what its list is for."""
    run = run_around(units, item)
    if len(run) < 2:
        return None
    intro, following = _list_at(units, _before(units, run[0]) or run[0])
    return intro if intro is not None and intro.text.rstrip().endswith(":") and any(u is item for u in following) else None


def _before(units: list[Unit], unit: Unit) -> Unit | None:
    position = next(i for i, u in enumerate(units) if u is unit)
    return units[position - 1] if position > 0 and units[position - 1].item is unit.item else None


def _list_at(units: list[Unit], best: Unit) -> tuple[Unit | None, list[Unit]]:
    """The list ``best`` belongs to; or, when ``best`` introduces the list that follows it
    (a section's heading, or "Customers in arrears can agree a payment plan." before the
    steps), ``best`` as its introduction and that list."""
    run = run_around(units, best)
    if len(run) > 1 or best.record:
        return None, run
    position = next(i for i, u in enumerate(units) if u is best)
    after = units[position + 1] if position + 1 < len(units) else None
    if after is not None and after.item is best.item and after.block == best.block + 1 and not after.record:
        following = run_around(units, after)
        if len(following) > 1 and following[0] is after:
            return best, following
    return None, run


def neighbour(question: str, units: list[Unit], unit: Unit) -> Unit | None:
    """The sentence next to ``unit`` in its paragraph (the one after it, else the one before)
    when it holds words of the question that the unit and its headings lack: an answer spread
    over two sentences ("Rail travel is standard class. First class needs the written approval
    of a director.")."""
    if unit.heading or unit.record or unit.whole_block:  # alone in its block
        return None
    position = next(i for i, u in enumerate(units) if u is unit)
    beside = [units[at] for at in (position + 1, position - 1) if 0 <= at < len(units)]
    beside = [u for u in beside if u.item is unit.item and u.block == unit.block and not u.heading and not u.record]
    if not beside:
        return None
    span = unit.item.span_at(unit.start)
    lacking = stems(question) - stems(" ".join([unit.text, unit.item.title, *span.section_path, unit.asked]))
    return next((u for u in beside if stems(u.text) & lacking), None)


def _who_is(named: str, chosen: list[Unit], ranked: list[Unit]) -> tuple[str, Unit] | None:
    """Who the team or role an answer names is, when another unit of the evidence says so with
    the person first ("Solene Marchetti, People Operations Manager.", "Name: Nadia Okonkwo-Hart;
    Role: Records Manager"): the second hop of a "who" question."""
    for unit in ranked:
        if any(unit is c for c in chosen):
            continue
        at = unit.text.find(named)
        if at <= 0:
            continue
        before = [m.group(0) for m in PERSON.finditer(unit.text[:at]) if m.group(0) != named]
        if before:
            return before[0], unit
    return None


