"""The structure real documents carry: reStructuredText, man pages (rendered and roff), Setext
and outline plain text, Markdown tables and comments, and the one title rule.

Every fixture is written here, in the shape of the real files (a man page as ``man | col -b``
prints it, a README as projects write them); none is read from elsewhere.
"""

from __future__ import annotations

import re

import pytest

from citewell import errors
from citewell.answers.extractive.units import RECORD
from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers import parse
from citewell.parsers.manpage import RECORD_WORDS
from citewell.parsers.titles import usable
from tests import files


def blocks(parsed: ParsedDocument, kind: BlockKind | None = None) -> list[str]:
    return [parsed.text[b.start : b.end] for b in parsed.blocks if kind is None or b.kind is kind]


def section_of(parsed: ParsedDocument, needle: str) -> list[str]:
    at = parsed.text.index(needle)
    return next(s.heading_path for s in parsed.sections if s.start <= at < s.end)


def assert_well_formed(parsed: ParsedDocument) -> None:
    """Blocks index into the text in order and hold no blank edges; sections tile the text;
    every record block reads as a record."""
    position = 0
    for block in parsed.blocks:
        assert position <= block.start < block.end <= len(parsed.text)
        piece = parsed.text[block.start : block.end]
        assert piece.strip() and piece == piece.strip("\n") and piece == piece.rstrip()  # code keeps its indent
        if block.kind in (BlockKind.RECORD, BlockKind.TABLE_ROW) and "; " in piece:
            assert RECORD.fullmatch(piece), piece
        position = block.end
    assert parsed.sections[0].start == 0 and parsed.sections[-1].end == len(parsed.text)
    for before, after in zip(parsed.sections, parsed.sections[1:]):
        assert before.end == after.start


# -- reStructuredText ------------------------------------------------------------------------

RST_README = b"""\
========
Widgetry
========

:Author: Ana Lopes
:Version: 2.1

Widgetry frobnicates widgets.

.. contents::

Exit codes
==========

====  ==========================================
Code  Meaning
====  ==========================================
0     Success.
2     The command line could not be parsed; check the flags.
130   Interrupted by the user (Ctrl-C).
====  ==========================================

Limits
------

+-----------+-------+
| Resource  | Limit |
+===========+=======+
| uploads   | 50 MB |
+-----------+-------+
| requests  | 100/s |
+-----------+-------+

Options
=======

-n, --dry-run   Do not change anything; print what would be done.
-q              Quiet mode.

.. note:: Options may be given in any order.

.. tabs::

   Linux users run ``widgetry --dry-run``.

Broken `inline markup here.
"""


def test_rst_tables_options_and_fields_are_records_and_sections_come_from_the_markup():
    parsed = parse(RST_README, "README.rst")
    assert parsed.mime == "text/x-rst"
    assert_well_formed(parsed)
    assert "====" not in parsed.text and "+---" not in parsed.text and "| " not in parsed.text
    rows = blocks(parsed, BlockKind.TABLE_ROW)
    assert "Code: 2; Meaning: The command line could not be parsed, check the flags." in rows
    assert "Code: 130; Meaning: Interrupted by the user (Ctrl-C)." in rows
    assert "Resource: uploads; Limit: 50 MB" in rows  # a grid table
    records = blocks(parsed, BlockKind.RECORD)
    assert "option: -n, --dry-run; description: Do not change anything, print what would be done." in records
    assert "option: -q; description: Quiet mode." in records
    assert "author: Ana Lopes; version: 2.1" in records  # the bibliographic fields, one record
    assert section_of(parsed, "Code: 2") == ["Widgetry", "Exit codes"]
    assert section_of(parsed, "Resource: uploads") == ["Widgetry", "Exit codes", "Limits"]
    assert section_of(parsed, "option: -q") == ["Widgetry", "Options"]
    assert parsed.title == "Widgetry"
    assert "Note: Options may be given in any order." in parsed.text
    assert "Linux users run ``widgetry --dry-run``." in parsed.text  # an unknown directive keeps its source
    assert "Broken `inline markup here." in parsed.text  # broken markup is text


def test_rst_title_field_names_a_document_without_a_title_and_nothing_reaches_stderr(capfd):
    source = b""":title: AWS CLI Return Codes
:category: General

These are the return codes.

* ``0`` -- Success.
* ``2`` -- The command could not be parsed.

  It also means files were skipped.

Unknown role :ref:`the guide <guide>` and `unclosed.
"""
    parsed = parse(source, "return-codes.rst")
    assert parsed.title == "AWS CLI Return Codes"
    assert "title: AWS CLI Return Codes; category: General" in blocks(parsed, BlockKind.RECORD)
    assert "2 -- The command could not be parsed. It also means files were skipped." in blocks(parsed, BlockKind.LIST_ITEM)
    assert "Unknown role the guide and `unclosed." in parsed.text
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_rst_include_and_raw_are_not_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000")
    source = f"Intro\n=====\n\nText.\n\n.. include:: {secret}\n\n.. raw:: html\n\n   <script>x()</script>\n".encode()
    parsed = parse(source, "doc.rst")
    assert "launch code" not in parsed.text and "<script>" not in parsed.text
    assert parsed.text.startswith("Intro")


def test_rst_without_a_title_is_named_by_the_file_and_a_lower_heading_is_no_title():
    parsed = parse(b"Some intro text first.\n\nUsage\n=====\n\nRun it.\n\nMore\n====\n\nText.\n", "notes.rst")
    assert parsed.title is None
    assert section_of(parsed, "Run it.") == ["Usage"]


# -- man pages --------------------------------------------------------------------------------

RENDERED = """\
WIDGET(1)                     Widget Manual                     WIDGET(1)

NAME
       widget - frobnicate widgets in a working directory

SYNOPSIS
       widget [-n | --dry-run] [-q] <path>...
              [--level=<n>]

DESCRIPTION
       widget frobnicates the widgets it finds under each path. It never
       changes a file it cannot read back.

       update
           Fetch the newest widget index from the configured mirror.

       •   Patterns in the index are read from the mirror's top
           directory.

OPTIONS
   General
       -n, --dry-run
           Do not change anything; print what would be done.

           Combined with -q, print nothing at all.

       -q, --quiet
           Quiet mode.

   Limits
       -l n        Frobnicate at most n widgets per path, then stop and
                   report the rest.

       --level=<n>
           Set the frobnication level. Levels above 5 need the
           experi\u2010
           mental flag.

EXAMPLES
       Frobnicate two trees
           Run it twice:

               $ widget a/
               $ widget b/

EXIT STATUS
       0   Success.

       2   Bad usage.

SEE ALSO
       gadget(1), widgetrc(5)

Widget 3.2                        2025-01-01                        WIDGET(1)
"""


@pytest.mark.parametrize("name", ["widget.1.txt", "widget", "widget.1"])
def test_a_rendered_man_page_is_known_by_its_content_and_gets_sections_and_option_records(name):
    parsed = parse(RENDERED.encode(), name)
    assert parsed.mime == "text/x-manpage"
    assert_well_formed(parsed)
    assert parsed.title == "widget - frobnicate widgets in a working directory"
    assert "WIDGET(1)" not in parsed.text and "2025-01-01" not in parsed.text  # header and footer dropped
    records = blocks(parsed, BlockKind.RECORD)
    assert "option: -n, --dry-run; description: Do not change anything, print what would be done. " \
           "Combined with -q, print nothing at all." in records
    assert "option: -q, --quiet; description: Quiet mode." in records
    assert "option: -l n; description: Frobnicate at most n widgets per path, then stop and report the rest." in records
    assert "option: --level=<n>; description: Set the frobnication level. Levels above 5 need the experimental flag." \
           in records
    assert "term: update; description: Fetch the newest widget index from the configured mirror." in records
    # a bulleted item is a list item, never a record whose key is the bullet
    assert "Patterns in the index are read from the mirror's top directory." in blocks(parsed, BlockKind.LIST_ITEM)
    assert not any(r.startswith("term: •") for r in records)
    assert section_of(parsed, "option: -q") == ["OPTIONS", "General"]
    assert section_of(parsed, "option: -l n") == ["OPTIONS", "Limits"]
    assert section_of(parsed, "gadget(1)") == ["SEE ALSO"]
    assert "widget [-n | --dry-run] [-q] <path>...\n       [--level=<n>]" in blocks(parsed, BlockKind.CODE)
    assert "example: Frobnicate two trees; description: Run it twice:" in records
    assert "$ widget a/\n$ widget b/" in blocks(parsed, BlockKind.CODE)  # the example stays code after its record


def test_a_long_option_description_keeps_a_record_a_chunk_can_hold():
    sentence = "This sentence describes the option at some length for the reader. "
    page = ("LONG(1)          General Commands Manual          LONG(1)\n\nNAME\n       long - a long page\n\n"
            "OPTIONS\n       --verbose\n" + "".join(f"           {sentence}\n" for _ in range(30))
            + "\n           A second paragraph.\n")
    parsed = parse(page.encode(), "long.txt")
    record = blocks(parsed, BlockKind.RECORD)[0]
    assert record.startswith("option: --verbose; description: This sentence")
    assert len(record.split()) <= RECORD_WORDS + 4
    rest = blocks(parsed, BlockKind.PARAGRAPH)
    assert rest[-1] == "A second paragraph." and rest[-2].startswith("This sentence")
    assert parsed.text.count(sentence.strip()) == 30  # nothing lost


def test_a_man_page_in_roff_source_is_read_without_groff():
    source = rb""".\" generated
.TH WIDGET 1 "2025-01-01" "widget 3.2"
.SH NAME
widget \- frobnicate \fIwidgets\fR
.SH OPTIONS
.TP
.BR \-n ", " \-\-dry\-run
Do not change anything.
.TP
\fB\-q\fR
Quiet mode.
.SH "EXIT STATUS"
.TP
2
Bad usage.
"""
    parsed = parse(source, "widget.1")
    assert parsed.mime == "text/x-manpage" and parsed.title == "widget - frobnicate widgets"
    assert_well_formed(parsed)
    assert blocks(parsed, BlockKind.RECORD) == [
        "option: -n, --dry-run; description: Do not change anything.",
        "option: -q; description: Quiet mode.",
        "exit status: 2; description: Bad usage.",
    ]
    assert section_of(parsed, "exit status: 2") == ["EXIT STATUS"]


def test_groffs_zero_width_and_fixed_space_escapes_print_what_groff_prints():
    """help2man pages (``ls``, every coreutils page) wrap each italic word in ``\\,`` and ``\\/``:
    read as themselves they made "--time=,WORD/" and "ls [,OPTION/]...", which no one searches for."""
    source = rb""".TH LS "1" "September 2022" "GNU coreutils 9.1" "User Commands"
.SH NAME
ls \- list directory contents
.SH SYNOPSIS
.B ls
[\fI\,OPTION\/\fR]... [\fI\,FILE\/\fR]...
.SH OPTIONS
.TP
\fB\-\-time\fR=\fI\,WORD\/\fR
select which time to show\:/sort by, e.g.\& \fIatime\/\fR\^\|\)\%.
.TP
\fB\-w\fR, \fB\-\-width\fR=\fI\,COLS\/\fR
set output width to COLS\0columns,\~0\ means\ no limit.
"""
    parsed = parse(source, "ls.1")
    assert parsed.mime == "text/x-manpage" and parsed.title == "ls - list directory contents"
    assert "ls [OPTION]... [FILE]..." in parsed.text
    assert blocks(parsed, BlockKind.RECORD) == [
        "option: --time=WORD; description: select which time to show/sort by, e.g. atime.",
        "option: -w, --width=COLS; description: set output width to COLS columns, 0 means no limit.",
    ]


def test_a_roff_page_that_defines_macros_before_its_title_is_a_man_page_and_its_escapes_survive_requests():
    """GNU grep's page defines strings and macros before its ``.TH``: it was read as plain text,
    roff and all. Read as a man page, a macro's body is no text, and the arguments of ``.BR`` keep
    their escapes (``\\-\\^\\-ignore\\-case`` was "-^-ignore-case" once a shell-style split ate them)."""
    source = rb""".\" GNU grep man page
.de dT
.ds Dt \\$2
..
.dT Time-stamp: "2019-12-29"
.TH GREP 1 \*(Dt "GNU grep 3.8" "User Commands"
.if !\w|\*(la| \{\
.de UE
\\*(la\\*(m1\\*(ra\\$*\"
..
.\}
.SH NAME
grep \- print lines that match patterns
.SH OPTIONS
.TP
.BR \-i ", " \-\^\-ignore\-case
Ignore case distinctions in patterns and input data.
.TP
.B \-\^\-no\-ignore\-case
Do not ignore case distinctions in patterns and input data.
"""
    parsed = parse(source, "grep.1")
    assert parsed.mime == "text/x-manpage" and parsed.title == "grep - print lines that match patterns"
    assert "m1" not in parsed.text and "$*" not in parsed.text
    assert blocks(parsed, BlockKind.RECORD) == [
        "option: -i, --ignore-case; description: Ignore case distinctions in patterns and input data.",
        "option: --no-ignore-case; description: Do not ignore case distinctions in patterns and input data.",
    ]
    assert parse(b"Some notes\n.TH is a roff request\n", "notes.txt").mime == "text/plain"  # text first: no man page


def test_a_macro_definition_ended_by_an_indented_dot_dot_or_never_ended_hides_no_page():
    """util-linux's pages (Asciidoctor) end ``.am URL`` with ``.  .`` inside an ``.if`` block:
    taken for a definition running to the end, every one of them was refused empty_text."""
    source = rb""".TH "REV" "1" "2022-05-11" "util\-linux 2.38.1" "User Commands"
.de URL
\fI\\$2\fP <\\$1>\\$3
..
.if \n[.g] \{\
.  am URL
.    ad l
.  .
.\}
.SH "NAME"
rev \- reverse lines characterwise
.SH "DESCRIPTION"
The \fBrev\fP utility copies the specified files to standard output, reversing the order of characters.
"""
    parsed = parse(source, "rev.1")
    assert parsed.title == "rev - reverse lines characterwise"
    assert "reversing the order of characters" in parsed.text and "ad l" not in parsed.text and "$2" not in parsed.text
    unended = parse(b".TH X 1\n.de Y\n.SH NAME\nx \\- does a thing\n.SH DESCRIPTION\nIt does the thing well.\n", "x.1")
    assert "It does the thing well." in unended.text  # a definition that never ends is none


def test_a_page_headed_by_its_name_alone_is_a_man_page_with_its_sections():
    """A page rendered narrow (or trimmed) heads itself "CARGO-PROFILES(5)" once, not twice: it was
    read as plain text, one section, and the answerer quoted a config example's 256 as the default."""
    page = (b"CARGO-PROFILES(5)\n\nNAME\n       cargo-profiles - compiler settings of a build\n\n"
            b"CODEGEN-UNITS\n       The default is 256 for incremental builds, and 16 for non-incremental builds.\n\n"
            b"BUILD OVERRIDES\n       Profiles can be overridden for build scripts:\n")
    parsed = parse(page, "cargo-profiles.5.txt")
    assert parsed.mime == "text/x-manpage" and parsed.title == "cargo-profiles - compiler settings of a build"
    assert "CARGO-PROFILES(5)" not in parsed.text
    assert section_of(parsed, "The default is 256") == ["CODEGEN-UNITS"]
    assert parse(b"printf(3)\n\nSee the printf manual for the formats.\n", "notes.txt").mime == "text/plain"


# zstd(1) 1.5.4 (BSD-licensed) as ``MANWIDTH=80 man -P cat`` prints it, abridged: its lists are
# bullets (``.IP "\[ci]" 4``, drawn ``○``), and its options are bullets that name the option first.
ZSTD_RENDERED = """\
ZSTD(1)                          User Commands                         ZSTD(1)

NAME
       zstd  -  zstd,  zstdmt,  unzstd,  zstdcat - Compress or decompress .zst
       files

DESCRIPTION
       zstd command line syntax is generally similar to gzip, but features the
       following differences:

       ○   Source files are preserved by default. It´s possible to remove them
           automatically by using the --rm command.

       ○   zstd displays a short help page when command line is an error.  Use
           -q to turn it off.

OPTIONS
   Operation Modifiers
       ○   -#: selects # compression level [1-19] (default: 3)

       ○   --rm: remove source file(s) after successful compression or  decom\u2010
           pression.  This command is silently ignored if output is stdout. If
           used in combination with -o, triggers a confirmation prompt  (which
           can be silenced with -f), as this is a destructive operation.

       ○   -T#, --threads=#: Compress using # working threads (default: 1). If
           # is 0, attempt to detect and use the number of physical CPU cores.

       ○   --[no-]pass-through  enable / disable passing through  uncompressed
           files as-is.

       •      a bullet drawn by .IP \\(bu, its text at the tag's width

       •      and one more

zstd 1.5.4                       February 2023                         ZSTD(1)
"""

ZSTD_ROFF = rb""".TH "ZSTD" "1" "February 2023" "zstd 1.5.4" "User Commands"
.SH "NAME"
\fBzstd\fR \- zstd, zstdmt, unzstd, zstdcat \- Compress or decompress \.zst files
.SH "DESCRIPTION"
\fBzstd\fR command line syntax is generally similar to gzip, but features the following differences:
.IP "\[ci]" 4
Source files are preserved by default\. It\'s possible to remove them automatically by using the \fB\-\-rm\fR command\.
.IP "\[ci]" 4
\fBzstd\fR displays a short help page when command line is an error\. Use \fB\-q\fR to turn it off\.
.IP "" 0
.P
.SH "OPTIONS"
.SS "Operation Modifiers"
.IP "\[ci]" 4
\fB\-#\fR: selects \fB#\fR compression level [1\-19] (default: 3)
.IP "\[ci]" 4
\fB\-\-rm\fR: remove source file(s) after successful compression or decompression\. This command is silently ignored if output is \fBstdout\fR\. If used in combination with \fB\-o\fR, triggers a confirmation prompt (which can be silenced with \fB\-f\fR), as this is a destructive operation\.
.IP "\[ci]" 4
\fB\-T#\fR, \fB\-\-threads=#\fR: Compress using \fB#\fR working threads (default: 1)\. If \fB#\fR is 0, attempt to detect and use the number of physical CPU cores\.
.IP "\[ci]" 4
\fB\-\-[no\-]pass\-through\fR enable / disable passing through uncompressed files as\-is\.
.IP "" 0
.P
A paragraph after the list\.
"""


@pytest.mark.parametrize(("name", "page"), [("zstd.1.txt", ZSTD_RENDERED.encode()), ("zstd.1", ZSTD_ROFF)])
def test_bullets_are_list_items_and_an_option_after_a_bullet_is_an_option(name, page):
    """A bullet was a record keyed by the bullet ("option: ○; description: --rm: remove ...") or
    a line of code; its text is a list item, and an option it names first is the option's record."""
    parsed = parse(page, name)
    assert parsed.mime == "text/x-manpage"
    assert_well_formed(parsed)
    items = blocks(parsed, BlockKind.LIST_ITEM)
    assert items[0].startswith("Source files are preserved by default.")  # groff draws the apostrophe "´"
    assert items[1] == "zstd displays a short help page when command line is an error. Use -q to turn it off."
    records = blocks(parsed, BlockKind.RECORD)
    assert "option: --rm; description: remove source file(s) after successful compression or decompression. This " \
           "command is silently ignored if output is stdout. If used in combination with -o, triggers a confirmation " \
           "prompt (which can be silenced with -f), as this is a destructive operation." in records
    assert "option: -#; description: selects # compression level [1-19] (default: 3)" in records
    assert "option: -T#, --threads=#; description: Compress using # working threads (default: 1). If # is 0, attempt " \
           "to detect and use the number of physical CPU cores." in records
    assert "--[no-]pass-through enable / disable passing through uncompressed files as-is." in items  # no colon: no record
    assert not any(mark in block for block in blocks(parsed) for mark in "○•")
    assert section_of(parsed, "option: --rm") == ["OPTIONS", "Operation Modifiers"]
    if name.endswith(".txt"):
        assert items[-2:] == ["a bullet drawn by .IP \\(bu, its text at the tag's width", "and one more"]
        assert "February 2023" not in parsed.text
    else:  # .IP "" 0 ends the list: what follows is no part of its last item
        assert "A paragraph after the list." in blocks(parsed, BlockKind.PARAGRAPH)


def test_docbook_bullets_are_list_items_and_a_bullet_indented_under_an_item_describes_it():
    """DocBook's pages (git's, systemd's) draw each bullet twice, by hand for nroff and with
    ``.IP \\(bu`` for troff, inside an ``.RS``: read as both, every item was a stray "•"
    paragraph over its text. A bullet indented under a ``.TP`` item is part of its description."""
    source = rb""".TH "GIT\-APPLY" "1" "10/07/2025" "Git 2\&.39\&.5" "Git Manual"
.SH "NAME"
git-apply \- Apply a patch to files and/or to the index
.SH "OPTIONS"
You can use different
\fB<action>\fR
values to control this behavior:
.sp
.RS 4
.ie n \{\
\h'-04'\(bu\h'+03'\c
.\}
.el \{\
.sp -1
.IP \(bu 2.3
.\}
\fBnowarn\fR
turns off the trailing whitespace warning\&.
.RE
.sp
.RS 4
.ie n \{\
\h'-04'\(bu\h'+03'\c
.\}
.el \{\
.sp -1
.IP \(bu 2.3
.\}
\fBwarn\fR
outputs warnings for a few such errors, but applies the patch as\-is (default)\&.
.RE
.sp
The list is over\&.
.TP
\fB\-\-whitespace\fR=\fIaction\fR
One of:
.RS
.IP \(bu 2
\fBfix\fR, to fix them;
.IP \(bu 2
\fBerror\fR, to refuse the patch\&.
.RE
"""
    parsed = parse(source, "git-apply.1")
    assert blocks(parsed, BlockKind.LIST_ITEM) == [
        "nowarn turns off the trailing whitespace warning.",
        "warn outputs warnings for a few such errors, but applies the patch as-is (default).",
    ]
    assert "•" not in parsed.text
    assert "The list is over." in blocks(parsed, BlockKind.PARAGRAPH)
    assert blocks(parsed, BlockKind.RECORD) == [
        "option: --whitespace=action; description: One of: fix, to fix them, error, to refuse the patch."]


def test_text_that_mentions_a_name_section_is_not_a_man_page():
    text = b"NAME\n\nPlease write your NAME and DESCRIPTION below.\n\nDESCRIPTION\n"
    assert parse(text, "form.txt").mime == "text/plain"


# -- plain text -------------------------------------------------------------------------------


def test_setext_and_underlined_headings_become_sections_and_the_first_is_the_title():
    text = (b"Mozilla-like Licence 2.0\n========================\n\n1. Definitions\n--------------\n\n"
            b"1.1. \"Contributor\" means each person.\n\n"
            b"2. Grants\n---------\n\nEach Contributor grants You a licence.\n\n"
            b"~~~~~~~~~\nNotes\n~~~~~~~~~\n\nOverlined heading body.\n\n----------------------------------------\n\n"
            b"A final line under a lone rule.\n")
    parsed = parse(text, "LICENSE.txt")
    assert_well_formed(parsed)
    assert parsed.title == "Mozilla-like Licence 2.0"
    assert section_of(parsed, "1.1.") == ["Mozilla-like Licence 2.0", "1. Definitions"]
    assert section_of(parsed, "Each Contributor") == ["Mozilla-like Licence 2.0", "2. Grants"]
    assert section_of(parsed, "Overlined heading body.") == ["Mozilla-like Licence 2.0", "2. Grants", "Notes"]
    assert "====" not in parsed.text and "----" not in parsed.text and "~~~" not in parsed.text
    assert "A final line under a lone rule." in parsed.text


def test_gnu_outline_news_gets_a_section_per_release_and_entries_as_items():
    text = (b"GNU Widget NEWS -- history of user-visible changes.\n\n"
            b"* Noteworthy changes in release 1.2 (2024-02-01)\n\n** Bug fixes\n\n"
            b"  widget no longer crashes on empty paths.\n  [bug introduced in widget-1.0]\n\n"
            b"* Noteworthy changes in release 1.1 (2023-05-01)\n\n** Support for autoconf 2.71\n\n"
            b"** Fix a double free when using an\n   absolute path\n")
    parsed = parse(text, "NEWS")
    assert_well_formed(parsed)
    assert section_of(parsed, "no longer crashes") == ["Noteworthy changes in release 1.2 (2024-02-01)", "Bug fixes"]
    assert blocks(parsed, BlockKind.LIST_ITEM) == ["Support for autoconf 2.71", "Fix a double free when using an absolute path"]
    assert section_of(parsed, "Support for autoconf") == ["Noteworthy changes in release 1.1 (2023-05-01)"]
    assert parsed.title is None  # no heading opens the file: it is named after the file


def test_a_release_whose_entries_sit_at_its_own_level_is_still_a_section():
    """Wget's NEWS writes 1.19.5's entries at the release's own level ("* Changes in Wget 1.19.5"
    then "* Fix cookie injection"): the release line read as one more entry, and its fix was
    cited under the release above it. A line shaped like the file's headings at its level heads."""
    text = (b"GNU Wget NEWS -- history of user-visible changes.\n\n"
            b"* Changes in Wget 1.20\n\n** New option --retry-on-host-error\n\n"
            b"* Changes in Wget 1.19.5\n\n* Fix cookie injection (CVE-2018-0494)\n\n* Enable TLS1.3\n\n"
            b"* Changes in Wget 1.19.4\n\n** A new option --retry-on-http-error\n")
    parsed = parse(text, "NEWS")
    assert_well_formed(parsed)
    assert section_of(parsed, "Fix cookie injection") == ["Changes in Wget 1.19.5"]
    assert section_of(parsed, "retry-on-host-error") == ["Changes in Wget 1.20"]
    assert section_of(parsed, "retry-on-http-error") == ["Changes in Wget 1.19.4"]
    assert blocks(parsed, BlockKind.LIST_ITEM) == [
        "New option --retry-on-host-error", "Fix cookie injection (CVE-2018-0494)", "Enable TLS1.3",
        "A new option --retry-on-http-error"]


def test_lines_at_the_margin_over_an_indented_body_head_its_sections_but_never_title_the_file():
    """A FAQ, an RFC or a NEWS file writes its headings at the margin and its body indented: the
    question "Why is %CPU low?" is what its indented answer is about."""
    text = b"Why does ps complain?\n\n\tBecause of the standards.\n\n\t\tps -o pid,comm\n\nWhy is %CPU low?\n\n\tUpgrade.\n"
    parsed = parse(text, "FAQ")
    assert_well_formed(parsed)
    assert section_of(parsed, "Because of the standards.") == ["Why does ps complain?"]
    assert section_of(parsed, "ps -o pid,comm") == ["Why does ps complain?"]
    assert section_of(parsed, "Upgrade.") == ["Why is %CPU low?"]
    assert parsed.title is None  # the first section's heading is not the file's title
    news = (b"NEWS for the Widget 3.8.1 release\n\n\tThis is a bugfix release.\n\n\t* Fix a crash.\n\n"
            b"NEWS for the Widget 3.8 release\n\n\tNew features:\n\n\t* SM3 hash function.\n")
    assert section_of(parse(news, "NEWS"), "SM3 hash function.") == ["NEWS for the Widget 3.8 release"]
    # prose at the margin with an indented example is not a file of margin headings
    prose = (b"Run the tool with its defaults.\n\n    tool --run\n\nThen check the output, which lists\nevery file.\n\n"
             b"It ends here.\n\nA last note.\n")
    assert not any(b.kind is BlockKind.HEADING for b in parse(prose, "notes.txt").blocks)


# -- Markdown -------------------------------------------------------------------------------


def test_markdown_tables_are_records_comments_are_dropped_and_the_title_is_the_first_h1():
    source = b"""<!-- This README is generated; edit docs/README.in instead. -->
<p align="center"><img src="logo.svg" alt=""></p>

## Badges

# orjson

orjson is fast. <!-- TODO: benchmark again -->

| Option | Meaning |
|--------|---------|
| OPT_INDENT_2 | Pretty-print with two spaces; slower |
| OPT_NAIVE_UTC | Treat naive datetimes as UTC |
"""
    parsed = parse(source, "README.md")
    assert_well_formed(parsed)
    assert "<!--" not in parsed.text and "generated" not in parsed.text and "TODO" not in parsed.text
    assert "<p" not in parsed.text and "logo" not in parsed.text
    assert parsed.title == "orjson"
    assert blocks(parsed, BlockKind.TABLE_ROW) == [
        "Option: OPT_INDENT_2; Meaning: Pretty-print with two spaces, slower",
        "Option: OPT_NAIVE_UTC; Meaning: Treat naive datetimes as UTC",
    ]
    assert section_of(parsed, "Option: OPT_NAIVE_UTC") == ["orjson"]


def test_a_script_or_style_inside_markdown_text_is_no_text():
    """Inline HTML's tags were dropped but a <script>'s code stayed, in the title, the passages and
    the answers ("... the facilities team window.pwned=1 and sent by email", answered "1.")."""
    source = (b"# Security <img src=x onerror=\"alert(1)\"> notice <script>document.title='x'</script>\n\n"
              b"The door code is changed every month by the <i>facilities</i> team "
              b"<script>window.pwned=1</script> and sent by <style>p{color:red}</style>email.\n")
    parsed = parse(source, "notice.md")
    assert parsed.title == "Security notice"
    assert blocks(parsed, BlockKind.PARAGRAPH) == ["The door code is changed every month by the facilities team and sent by email."]


def test_markdown_without_an_h1_has_no_title_of_its_own():
    assert parse(b"## Setup\n\nRun it.\n", "setup.md").title is None


# -- titles -----------------------------------------------------------------------------------


def test_html_title_else_its_first_h1_never_a_lower_heading():
    assert parse(b"<html><body><h2>Contents</h2><h1>Runbook</h1><p>x</p></body></html>", "a.html").title == "Runbook"
    assert parse(b"<html><body><h2>Contents</h2><p>x</p></body></html>", "b.html").title is None
    assert parse(b"<html><head><title>Untitled</title></head><body><h1>Real</h1></body></html>", "c.html").title == "Real"


def _pdf_with_bookmarks(title: str | None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=24)
    line = {"new_x": "LMARGIN", "new_y": "NEXT"}
    pdf.multi_cell(0, 12, "Widget Service Manual", **line)
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "Version 3.2, for operators.", **line)
    pdf.add_page()
    pdf.start_section("1 Introduction")
    pdf.set_font("Helvetica", style="B", size=16)
    pdf.multi_cell(0, 10, "1 Introduction", **line)
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "The widget service frobnicates widgets for every tenant.", **line)
    return bytes(pdf.output())


@pytest.mark.parametrize(("metadata", "expected"), [
    (None, "Widget Service Manual"),
    ("Microsoft Word - manual.doc", "Widget Service Manual"),
    ("untitled", "Widget Service Manual"),
    ("Widget Operations Guide", "Widget Operations Guide"),
])
def test_a_pdf_is_titled_by_its_metadata_else_its_largest_first_page_line_never_a_bookmark(metadata, expected):
    parsed = parse(_pdf_with_bookmarks(metadata), "manual.pdf")
    assert parsed.title == expected
    assert section_of(parsed, "frobnicates widgets") == ["1 Introduction"]


def test_a_docx_is_titled_by_its_properties_else_its_title_styled_paragraph():
    data = files.docx_bytes("Staff Handbook", [("Leave", ["27 days."])])
    assert parse(data, "handbook.docx").title == "Staff Handbook"


def test_title_placeholders_and_file_names_are_no_titles():
    for junk in ("Untitled", "Document1", "Microsoft Word - report.docx", "report_final.pdf", "C:\\docs\\x.doc", "  ", "123"):
        assert usable(junk) is None, junk
    assert usable("Microsoft Word - Quarterly Report") == "Quarterly Report"
    assert usable("  GNU   Wget 1.21 Manual ") == "GNU Wget 1.21 Manual"


def test_a_csv_cell_holding_a_semicolon_still_makes_a_record():
    parsed = parse(b"code,meaning\nE7,reboot; then wait\n", "codes.csv")
    assert blocks(parsed, BlockKind.RECORD) == ["code: E7; meaning: reboot, then wait"]
    assert RECORD.fullmatch(blocks(parsed, BlockKind.RECORD)[0])


def test_an_rst_file_that_is_not_text_fails_typed():
    with pytest.raises(errors.IngestError):
        parse(bytes(range(128, 256)) * 40, "garbage.rst")


def test_no_block_of_any_parser_starts_with_a_table_rule():
    parsed = parse(RST_README, "README.rst")
    assert not any(re.match(r"[=+|-]{3}", b) for b in blocks(parsed))
