"""What may reach a terminal: text from documents, questions and file names, made inert."""

from __future__ import annotations

import re
from typing import Any

# Control characters a terminal would act on: a document's ESC could clear the screen, retitle
# the window or write the clipboard (OSC 52) when its text is printed. Line breaks and tabs stay.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(value: Any) -> Any:
    """``value`` with every control character in its strings shown as ``\\xNN``, never sent."""
    if isinstance(value, str):
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
    if isinstance(value, dict):
        return {key: printable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [printable(item) for item in value]
    return value
