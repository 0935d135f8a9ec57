"""Opaque cursors: where the next page of a paged read starts, handed to the caller and back.

A cursor is a small pydantic model written as unpadded URL-safe base64 of its JSON. It is not
secret and not signed: it names only a position (an offset, a key, a turn's seq) in a read the
caller is already allowed to make, and every page checks the caller again from their trusted
identity. A cursor that does not read back as the model a read expects (cut short, edited,
another endpoint's) is an :class:`~citewell.errors.InvalidInput` (400), never a 500.
"""

from __future__ import annotations

import base64
import binascii
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from citewell.errors import InvalidInput

Cursor = TypeVar("Cursor", bound=BaseModel)


def encode(cursor: BaseModel) -> str:
    return base64.urlsafe_b64encode(cursor.model_dump_json().encode()).decode().rstrip("=")


def decode(value: str, model: type[Cursor]) -> Cursor:
    """``value`` read back as ``model``; InvalidInput when it is not one."""
    try:
        data = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return model.model_validate_json(data)
    except (binascii.Error, ValueError, ValidationError):
        raise InvalidInput("cursor is not one this endpoint returned: pass the `next` of the previous page as it came") from None
