"""The ports themselves: none grows past a dozen methods of its own (a store with more is split
into ports by role), and which adapters declare the optional capabilities, checked as the code
checks them (``isinstance`` against the runtime-checkable Protocols in ``citewell.ports``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import citewell.ports
from citewell.index.opensearch import OpenSearchIndex
from citewell.index.sqlite import SqliteSearchIndex
from citewell.metadata.dynamodb import DynamoMetadataStore
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.objects.folder import FolderObjectStore
from citewell.objects.s3 import S3ObjectStore
from citewell.ports import ClaimingUploads, EmbedderCheckedIndex, ExpungingIndex, SizedObjects, StagedIndex

MAX_METHODS = 12


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


def own_methods(cls: type) -> list[str]:
    """The methods (properties too) written in the class's own body, not inherited."""
    found = []
    for name, value in vars(cls).items():
        function = value.fget if isinstance(value, property) else value
        if inspect.isfunction(function) and function.__qualname__.startswith(f"{cls.__qualname__}."):
            found.append(name)
    return found


def protocols() -> dict[str, type]:
    """Every Protocol defined in ``citewell.ports`` and its modules, by qualified name."""
    modules = [citewell.ports, *(importlib.import_module(f"citewell.ports.{m.name}")
                                 for m in pkgutil.iter_modules(citewell.ports.__path__))]
    return {f"{cls.__module__}.{cls.__qualname__}": cls for module in modules for cls in vars(module).values()
            if isinstance(cls, type) and getattr(cls, "_is_protocol", False) and cls.__module__.startswith("citewell.ports")}


def test_no_port_declares_more_than_twelve_methods_of_its_own():
    found = protocols()
    assert {"citewell.ports.records.DocumentRecords", "citewell.ports.index.SearchIndex"} <= set(found)  # the walk finds them
    assert own_methods(found["citewell.ports.records.DocumentRecords"])  # and counts what a body declares
    too_many = {name: len(own_methods(cls)) for name, cls in found.items() if len(own_methods(cls)) > MAX_METHODS}
    assert too_many == {}, f"split these ports by role (at most {MAX_METHODS} methods each): {too_many}"
