"""A new embedding model: the migration builds the index for the new identity beside the
served one, re-embeds every served revision, switches the alias in one step and drops the
old index. The new model stands in for a hosted one: words hashed into 64 dimensions."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import pytest

from citewell.aws.search_index import migrate
from citewell.aws.settings import services_from_env
from citewell.errors import EmbedderMismatch
from citewell.models import Identity
from tests.test_aws_chain import HANDBOOK, api, aws, knn_proxy, pump, upload  # noqa: F401


class HashedWords:
    identity = "hashed-words@1:64"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in re.findall(r"\w+", text.lower()):
                row[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        return rows / np.clip(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)


def test_a_new_model_gets_a_new_index_switched_in_one_step(aws):
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    services = services_from_env()[1]
    client, alias = services.index.client, services.index.alias
    (old,) = client.indices.get_alias(name=alias)
    model, caller = HashedWords(), Identity(tenant="northpier", roles=frozenset({"staff"}))
    with pytest.raises(EmbedderMismatch):
        services.index.lanes("annual leave", model.embed(["annual leave"])[0], model.identity, caller, 5)

    report = migrate(services, model)

    assert report["switched"] and report["chunks"] == 2 and report["dropped"] == [old]
    (new,) = client.indices.get_alias(name=alias)
    assert new != old and not client.indices.exists(index=old)
    found = services.index.lanes("annual leave", model.embed(["paid annual leave per calendar year"])[0], model.identity, caller, 5)
    assert "27 days of paid annual leave" in found["vector"][0].text and found["bm25"]
    assert services.metadata.get_embeddings(model.identity, [c.content_hash for c in services.metadata.get_chunks(
        "northpier", "handbook.md", services.metadata.get_document("northpier", "handbook.md").active_revision)])
    assert migrate(services, model)["switched"] is False  # already there: nothing to do
