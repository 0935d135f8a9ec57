"""The ports themselves: which adapters declare the optional capabilities, checked as the code
checks them (``isinstance`` against the runtime-checkable Protocols in ``citewell.ports``)."""

from __future__ import annotations

from citewell.aws.metadata import DynamoMetadataStore
from citewell.aws.objects import S3ObjectStore
from citewell.aws.search_index import OpenSearchIndex
from citewell.local.index import SqliteSearchIndex
from citewell.local.metadata import SqliteMetadataStore
from citewell.local.objects import FolderObjectStore
from citewell.ports import ClaimingUploads, EmbedderCheckedIndex, ExpungingIndex, SizedObjects, StagedIndex


def bare(cls: type) -> object:
    """An adapter object without its connections: the checks look at its methods only."""
    return cls.__new__(cls)


def test_the_cloud_adapters_declare_their_capabilities_and_the_embedded_ones_theirs():
    dynamo, s3, opensearch = bare(DynamoMetadataStore), bare(S3ObjectStore), bare(OpenSearchIndex)
    sqlite, folder, embedded = bare(SqliteMetadataStore), bare(FolderObjectStore), bare(SqliteSearchIndex)
    assert isinstance(dynamo, ClaimingUploads) and not isinstance(sqlite, ClaimingUploads)
    assert isinstance(s3, SizedObjects) and not isinstance(folder, SizedObjects)
    assert isinstance(opensearch, ExpungingIndex) and not isinstance(embedded, ExpungingIndex)
    assert isinstance(opensearch, EmbedderCheckedIndex) and not isinstance(embedded, EmbedderCheckedIndex)
    assert isinstance(embedded, StagedIndex) and not isinstance(opensearch, StagedIndex)
