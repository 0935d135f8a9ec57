"""Request bodies of the API, bounded by what a record and an index row can hold."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from citewell.filters import SearchFilter
from citewell.models.conversations import MAX_COMMENT_CHARS
from citewell.models.documents import Descriptive
from citewell.models.values import validate_name, validate_question

MAX_QUESTION_CHARS = 2000
MAX_K = 100


Question = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS), AfterValidator(validate_question)]
# A field the API does not know is refused, not dropped: a client sending "tenant" or a misspelt
# "filter" learns that it had no effect.
CLOSED = ConfigDict(extra="forbid")


class NewDocument(Descriptive):
    """Bounded so a record always fits a DynamoDB item and an index row. The descriptive fields
    (locale, tags, trust_tier, authority, effective_from/until) are the uploader's word, as the roles
    are. With ``url`` the service fetches the page (its id defaults to the normalised URL, its source
    is the URL); without it the caller sends the file through the upload form it is given."""

    model_config = CLOSED
    document_id: str | None = Field(default=None, min_length=1, max_length=512)
    url: str | None = Field(default=None, min_length=1, max_length=2048)
    allowed_roles: list[str] = Field(min_length=1, max_length=32)
    title: str | None = Field(default=None, max_length=512)
    source: str = Field(default="", max_length=2048)
    filename: str | None = Field(default=None, max_length=512)

    @field_validator("allowed_roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        return [validate_name(role, "role") for role in value]

    @model_validator(mode="after")
    def _what(self) -> NewDocument:
        if self.document_id is None and self.url is None:
            raise ValueError("name the document: document_id, or the url of a web page to fetch")
        if self.url is not None and (self.source or self.filename):
            raise ValueError("a fetched page's source is its url and its type comes from its bytes: "
                             "leave source and filename out")
        return self


class SearchRequest(BaseModel):
    model_config = CLOSED
    question: Question
    k: StrictInt = Field(default=10, ge=1, le=MAX_K)
    filters: SearchFilter | None = None  # narrows what the caller may read, inside both lanes


class QueryRequest(BaseModel):
    model_config = CLOSED
    question: Question
    filters: SearchFilter | None = None
    mixed_locales: StrictBool = False  # evidence in every language, not only the best hit's
    # A conversation this question follows up (the id a previous answer returned); none starts one.
    conversation_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")


class FeedbackRequest(BaseModel):
    model_config = CLOSED
    helpful: StrictBool
    comment: str | None = Field(default=None, max_length=MAX_COMMENT_CHARS)
