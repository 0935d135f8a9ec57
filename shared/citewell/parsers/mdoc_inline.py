"""One line of mdoc (BSD's manual macros: ``.Fl``, ``.Ar``, ``.Cm``, ``.Xr``, ``.Op``) read to the
words it prints, as ``mandoc`` and ``groff -mdoc`` set them.

A macro line is a macro's name and its arguments, and an argument that names a callable macro
(unquoted) calls it: ``.Op Fl o Ar option`` prints "[-o option]". The punctuation arguments are
delimiters that attach as mdoc attaches them: a closing one (``. , : ; ) ] ? !``) to the word
before it, an opening one (``( [``) to the word after; ``.Ns`` and ``.Pf`` join two words, and
``.Sm off`` joins every word until ``.Sm on``. Fonts are no text, so most macros print their
arguments as they are; the ones that print more say so in ``_Setter``: ``.Fl`` a dash before
each word, the enclosures (``.Dq``, ``.Op``, ``.Pq``, ``.Oo`` ... ``.Oc``) their marks, ``.Xr ssh 1``
"ssh(1)", ``.Fn`` a call, ``.St`` and ``.At`` the standard or system they name, ``.Ex`` and ``.Rv``
their sentence.

Blocks (sections, lists, displays) are read by :mod:`citewell.parsers.mdoc`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from citewell.parsers.roff import unescape

CLOSING = frozenset({".", ",", ":", ";", ")", "]", "?", "!"})
OPENING = frozenset({"(", "["})
MIDDLE = "|"

# Enclose the rest of their line (trailing closing delimiters stay outside): .Op Fl v -> "[-v]".
_ENCLOSING = {"Aq": ("<", ">"), "Bq": ("[", "]"), "Brq": ("{", "}"), "Dq": ("“", "”"), "Op": ("[", "]"),
              "Pq": ("(", ")"), "Ql": ("‘", "’"), "Qq": ('"', '"'), "Sq": ("‘", "’")}
# Open and close an enclosure that may run over lines: .Oo ... .Oc.
_OPENS = {"Ao": "<", "Bo": "[", "Bro": "{", "Do": "“", "Oo": "[", "Po": "(", "Qo": '"', "So": "‘", "Xo": ""}
_CLOSES = {"Ac": ">", "Bc": "]", "Brc": "}", "Dc": "”", "Oc": "]", "Pc": ")", "Qc": '"', "Sc": "’", "Xc": ""}
# The systems a page names by macro, and their version argument: .Ox 3.0 -> "OpenBSD 3.0".
_SYSTEMS = {"Nx": "NetBSD", "Fx": "FreeBSD", "Ox": "OpenBSD", "Dx": "DragonFly", "Bsx": "BSD/OS"}
_AT = {"v1": "Version 1", "v2": "Version 2", "v3": "Version 3", "v4": "Version 4", "v5": "Version 5",
       "v6": "Version 6", "v7": "Version 7", "32v": "32V", "III": "System III", "V": "System V",
       "V.1": "System V Release 1", "V.2": "System V Release 2", "V.3": "System V Release 3",
       "V.4": "System V Release 4"}
_STANDARDS = {
    "-ansiC": "ANSI X3.159-1989 (“ANSI C89”)", "-ansiC-89": "ANSI X3.159-1989 (“ANSI C89”)",
    "-isoC": "ISO/IEC 9899:1990 (“ISO C90”)", "-isoC-90": "ISO/IEC 9899:1990 (“ISO C90”)",
    "-isoC-99": "ISO/IEC 9899:1999 (“ISO C99”)", "-isoC-2011": "ISO/IEC 9899:2011 (“ISO C11”)",
    "-p1003.1": "IEEE Std 1003.1 (“POSIX.1”)", "-p1003.1-88": "IEEE Std 1003.1-1988 (“POSIX.1”)",
    "-p1003.1-90": "IEEE Std 1003.1-1990 (“POSIX.1”)", "-p1003.1-2001": "IEEE Std 1003.1-2001 (“POSIX.1”)",
    "-p1003.1-2004": "IEEE Std 1003.1-2004 (“POSIX.1”)", "-p1003.1-2008": "IEEE Std 1003.1-2008 (“POSIX.1”)",
    "-p1003.2": "IEEE Std 1003.2 (“POSIX.2”)", "-p1003.2-92": "IEEE Std 1003.2-1992 (“POSIX.2”)",
    "-susv2": "Version 2 of the Single UNIX Specification (“SUSv2”)",
    "-susv3": "Version 3 of the Single UNIX Specification (“SUSv3”)",
    "-susv4": "Version 4 of the Single UNIX Specification (“SUSv4”)",
    "-xpg4": "X/Open Portability Guide Issue 4 (“XPG4”)", "-xpg4.2": "X/Open Portability Guide Issue 4, Version 2 (“XPG4.2”)",
    "-svid4": "System V Interface Definition, Fourth Edition (“SVID4”)",
}
# Callable macros that print their arguments as they are (fonts and meanings are no text).
_PLAIN = frozenset({"Ad", "Cd", "Cm", "Dv", "Em", "Er", "Ev", "Fd", "Fr", "Ft", "Ic", "Li", "Ms", "Mt", "No",
                    "Ot", "Sx", "Sy", "Tn", "Va", "Vt", "An", "Lb", "Es", "En"})
# Arguments that print nothing: an author line's break option.
_SILENT = {"An": frozenset({"-split", "-nosplit"})}


@dataclass
class Token:
    text: str
    quoted: bool = False

    @property
    def delimiter(self) -> bool:
        return not self.quoted and (self.text in CLOSING or self.text in OPENING or self.text == MIDDLE)


def tokens(rest: str) -> list[Token]:
    """A macro line's arguments: split at spaces and tabs outside double quotes (``""`` inside
    quotes is a quote); a tab is a ``Ta`` (a column list's cell break), as mdoc reads it."""
    out: list[Token] = []
    i, n = 0, len(rest)
    while i < n:
        char = rest[i]
        if char == " ":
            i += 1
        elif char == "\t":
            out.append(Token("Ta"))
            i += 1
        elif char == '"':
            i = _quoted(rest, i + 1, out)
        else:
            start = i
            while i < n and rest[i] not in " \t":
                i += 2 if rest[i] == "\\" else 1
            out.append(Token(rest[start:i]))
    return out


def _quoted(rest: str, i: int, out: list[Token]) -> int:
    chars: list[str] = []
    while i < len(rest):
        if rest[i] == '"':
            if rest[i + 1 : i + 2] != '"':
                i += 1
                break
            chars.append('"')
            i += 2
        elif rest[i] == "\\":
            chars.append(rest[i : i + 2])
            i += 2
        else:
            chars.append(rest[i])
            i += 1
    out.append(Token("".join(chars), quoted=True))
    return i


@dataclass
class Words:
    """Text being set: words joined by a space unless glued."""

    parts: list[str] = field(default_factory=list)
    glue: bool = False  # the next word joins the last without a space

    def text(self) -> str:
        return "".join(self.parts).strip()

    def take(self) -> str:
        text = self.text()
        self.parts.clear()
        self.glue = False
        return text


class Setter:
    """Sets macro lines and text lines into :class:`Words`, keeping what runs over lines: the
    page's name (a bare ``.Nm`` prints it), ``.Sm off``, an open ``.Fo`` and ``.Xo``."""

    def __init__(self) -> None:
        self.name = ""
        self.spacing = True
        self.space_once = False
        self.function_args: int | None = None  # inside .Fo ... .Fc: how many .Fa were set
        self.extending = 0  # open .Xo blocks
        self.out = Words()
        self.args: list[Token] = []
        self.at = 0
        self.stop = 0
        self._macros: dict[str, Callable[[str], None]] = {
            "Fl": self._flag, "Ar": self._default("file ..."), "Pa": self._default("~"), "Nm": self._page_name,
            "Xr": self._reference, "Ns": self._no_space, "Pf": self._prefix, "Ap": self._apostrophe,
            "Sm": self._spacing_mode, "Fn": self._function, "Fo": self._function_open, "Fc": self._function_close,
            "Fa": self._function_argument, "Lk": self._link, "In": self._include, "St": self._standard,
            "At": self._att, "Bx": self._bsd, "Ux": self._fixed("UNIX"), "Ex": self._exit_sentence,
            "Rv": self._return_sentence, "Nd": self._description, "Ta": self._fixed("\t"), "Eo": self._open_custom,
            "Ec": self._close_custom,
        }
        for macro in _ENCLOSING:
            self._macros[macro] = self._enclosure
        for macro in _OPENS:
            self._macros[macro] = self._opener
        for macro in _CLOSES:
            self._macros[macro] = self._closer
        for macro in _SYSTEMS:
            self._macros[macro] = self._system

    # -- what a reader calls -------------------------------------------------------------------

    def macro_line(self, out: Words, name: str, args: list[Token]) -> None:
        """Set ``.name args`` into ``out``."""
        self.out, self.args, self.at, self.stop = out, args, 0, len(args)
        self._call(name)
        self._rest()

    def text_line(self, out: Words, line: str) -> None:
        """Set a line of text; ``\\c`` at its end joins the next line's first word to its last."""
        joined = line.endswith("\\c")
        self.out = out
        self._word(unescape(line[:-2] if joined else line).strip())
        if joined:
            out.glue = True

    def callable(self, token: Token) -> bool:
        return not token.quoted and (token.text in self._macros or token.text in _PLAIN)

    # -- the machinery -------------------------------------------------------------------------

    def _word(self, text: str, *, glue_before: bool = False, glue_after: bool = False) -> None:
        out = self.out
        if text:
            if out.parts and not (glue_before or out.glue) and (self.spacing or self.space_once):
                out.parts.append(" ")
            out.parts.append(text)
            out.glue = self.space_once = False
        out.glue = out.glue or glue_after

    def _delimiter(self, token: Token) -> None:
        if token.text in CLOSING:
            self._word(token.text, glue_before=True)
        elif token.text in OPENING:
            self._word(token.text, glue_after=True)
        else:
            self._word(token.text)

    def _call(self, name: str) -> None:
        handler = self._macros.get(name)
        if handler is not None:
            handler(name)
        elif name in _SILENT:
            self._words(skip=_SILENT[name])

    def _next(self) -> Token | None:
        return self.args[self.at] if self.at < self.stop else None

    def _rest(self) -> None:
        """The arguments up to ``stop``: words, delimiters and the macros they call."""
        while (token := self._next()) is not None:
            self.at += 1
            if self.callable(token):
                self._call(token.text)
            elif token.delimiter:
                self._delimiter(token)
            else:
                self._word(unescape(token.text))

    def _words(self, each: Callable[[str], str] = str, *, skip: frozenset[str] = frozenset()) -> bool:
        """This macro's own words (up to the next macro), delimiters set in their place; whether
        there was a word."""
        any_word = False
        while (token := self._next()) is not None and not self.callable(token):
            self.at += 1
            if token.delimiter:
                self._delimiter(token)
            elif token.text not in skip:
                self._word(each(unescape(token.text)))
                any_word = True
        return any_word

    def _leading_openers(self) -> None:
        while (token := self._next()) is not None and token.delimiter and token.text in OPENING:
            self.at += 1
            self._delimiter(token)

    def _argument(self) -> str | None:
        """The next argument if it is a word (neither a macro nor a delimiter)."""
        token = self._next()
        if token is None or token.delimiter or self.callable(token):
            return None
        self.at += 1
        return unescape(token.text)

    # -- the macros ----------------------------------------------------------------------------

    def _flag(self, _: str) -> None:
        """Each word with a dash; a dash alone before a delimiter (``.Fl ?`` is "-?") or a macro
        (``.Fl Fl apple`` is "--apple")."""
        self._leading_openers()
        following = self._next()
        if following is None or following.delimiter or self.callable(following):
            self._word("-", glue_after=following is not None and (following.text == "Fl" or following.delimiter)
                       and not following.quoted)
        self._words(lambda word: "-" + word)

    def _default(self, empty: str) -> Callable[[str], None]:
        def setter(_: str) -> None:
            self._leading_openers()
            token = self._next()
            if token is None or self.callable(token) or token.text in CLOSING:
                self._word(empty)
            self._words()

        return setter

    def _fixed(self, text: str) -> Callable[[str], None]:
        def setter(_: str) -> None:
            self._word(text)

        return setter

    def _page_name(self, _: str) -> None:
        self._leading_openers()
        name = self._argument()
        if name is None:
            self._word(self.name)
            return
        self.name = self.name or name
        self._word(name)
        self._words()

    def _reference(self, _: str) -> None:
        self._leading_openers()
        name = self._argument()
        if name is None:
            return
        section = self._argument()
        self._word(f"{name}({section})" if section else name)

    def _no_space(self, _: str) -> None:
        self.out.glue = True

    def _prefix(self, _: str) -> None:
        token = self._next()
        if token is not None:
            self.at += 1
            self._word(unescape(token.text), glue_after=True)

    def _apostrophe(self, _: str) -> None:
        self._word("'", glue_before=True, glue_after=True)

    def _spacing_mode(self, _: str) -> None:
        mode = self._argument()
        self.spacing = (mode == "on") if mode in ("on", "off") else not self.spacing
        self.space_once = not self.spacing  # the first word after .Sm off is spaced; those after it are not

    def _enclosure(self, name: str) -> None:
        opening, closing = _ENCLOSING[name]
        stop = self.stop
        while stop > self.at and self.args[stop - 1].delimiter and self.args[stop - 1].text in CLOSING:
            stop -= 1  # trailing punctuation is set after the closing mark: .Dq word . -> “word”.
        self._word(opening, glue_after=True)
        outer, self.stop = self.stop, stop
        self._rest()
        self.stop = outer
        joined = self.out.glue  # ".Op Ar user Ns @ Ns": what follows the mark joins it
        self._word(closing, glue_before=True, glue_after=joined)

    def _opener(self, name: str) -> None:
        if name == "Xo":
            self.extending += 1
            return
        self._word(_OPENS[name], glue_after=True)

    def _closer(self, name: str) -> None:
        if name == "Xc":
            self.extending = max(0, self.extending - 1)
            return
        self._word(_CLOSES[name], glue_before=True)

    def _open_custom(self, _: str) -> None:
        self._word(self._argument() or "", glue_after=True)

    def _close_custom(self, _: str) -> None:
        self._word(self._argument() or "", glue_before=True)

    def _function(self, _: str) -> None:
        self._leading_openers()
        name = self._argument()
        if name is None:
            return
        arguments = []
        while (argument := self._argument()) is not None:
            arguments.append(argument)
        self._word(f"{name}({', '.join(arguments)})")

    def _function_open(self, _: str) -> None:
        self._word((self._argument() or "") + "(", glue_after=True)
        self.function_args = 0

    def _function_argument(self, _: str) -> None:
        if self.function_args is None:
            self._words()
            return
        while (argument := self._argument()) is not None:
            self._word(argument if not self.function_args else ", " + argument, glue_before=True)
            self.function_args += 1

    def _function_close(self, _: str) -> None:
        self.function_args = None
        self._word(")", glue_before=True)

    def _link(self, _: str) -> None:
        url = self._argument()
        if url is None:
            return
        words = []
        while (word := self._argument()) is not None:
            words.append(word)
        self._word(f"{' '.join(words)}: {url}" if words else url)

    def _include(self, _: str) -> None:
        header = self._argument()
        if header:
            self._word(f"<{header}>")

    def _standard(self, _: str) -> None:
        name = self._argument()
        if name:
            self._word(_STANDARDS.get(name, name.lstrip("-")))

    def _att(self, _: str) -> None:
        token = self._next()
        version = _AT.get(token.text) if token is not None else None
        if version:
            self.at += 1
            self._word(f"{version} AT&T UNIX" if version.startswith("V") else f"AT&T {version} UNIX")
        else:
            self._word("AT&T UNIX")

    def _bsd(self, _: str) -> None:
        version = self._argument()
        variant = self._argument() if version else None
        self._word(f"{version or ''}BSD" + (f"-{variant}" if variant else ""))

    def _system(self, name: str) -> None:
        version = self._argument()
        self._word(f"{_SYSTEMS[name]} {version}" if version else _SYSTEMS[name])

    def _exit_sentence(self, _: str) -> None:
        names = [a for a in self._all_arguments() if a != "-std"] or [self.name]
        self._word(f"The {_listed(names)} utilit{'ies' if len(names) > 1 else 'y'} exit"
                   f"{'' if len(names) > 1 else 's'} 0 on success, and >0 if an error occurs.")

    def _return_sentence(self, _: str) -> None:
        names = [f"{a}()" for a in self._all_arguments() if a != "-std"]
        subject = f"The {_listed(names)} function{'s' if len(names) > 1 else ''}" if names else "The function"
        self._word(f"{subject} return{'' if len(names) > 1 else 's'} the value 0 if successful; otherwise the value "
                   "-1 is returned and the global variable errno is set to indicate the error.")

    def _all_arguments(self) -> list[str]:
        found = []
        while (argument := self._argument()) is not None:
            found.append(argument)
        return found

    def _description(self, _: str) -> None:
        self._word("-")
        self._words()


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


