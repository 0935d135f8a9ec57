"""Manual pages written in mdoc, BSD's macros (``.Sh``, ``.Bl -tag``, ``.It Cm Host``, ``.Fl``):
every OpenSSH page, tmux's, dash's, file's. Read as man(7) they lost every macro and its words
("The TCP keepalive option enabled by is spoofable") and had no sections.

The pages in ``pages/`` are excerpts of the real ones as Debian installs them (ssh_config(5) and
ssh(1) from OpenSSH under its BSD licence, tmux(1) under the ISC licence, each licence kept at
the top of its file); each marks where it was cut.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers import parse

PAGES = Path(__file__).parent / "pages"


def blocks(parsed: ParsedDocument, kind: BlockKind | None = None) -> list[str]:
    return [parsed.text[b.start : b.end] for b in parsed.blocks if kind is None or b.kind is kind]


def section_of(parsed: ParsedDocument, needle: str) -> list[str]:
    at = parsed.text.index(needle)
    return next(s.heading_path for s in parsed.sections if s.start <= at < s.end)


def starting(found: list[str], start: str) -> str:
    return next(block for block in found if block.startswith(start))


def test_an_mdoc_page_keeps_its_keywords_sections_and_keyword_records():
    source = (PAGES / "ssh_config.5").read_bytes()
    parsed = parse(gzip.compress(source), "ssh_config.5.gz")  # as installed
    assert parsed.mime == "text/x-manpage" and parsed.title == "ssh_config - OpenSSH client configuration file"
    # the macros' words are in their sentences, delimiters attached as mdoc attaches them
    assert "The TCP keepalive option enabled by TCPKeepAlive is spoofable." in parsed.text
    assert "configuration options using the ssh, scp, and sftp -o option." in parsed.text
    assert "sections separated by Host specifications" in parsed.text
    assert "not the default in ssh(1):" in parsed.text
    records = blocks(parsed, BlockKind.RECORD)
    assert starting(records, "term: ServerAliveInterval; ") == (
        "term: ServerAliveInterval; description: Sets a timeout interval in seconds after which if no data has been "
        "received from the server, ssh(1) will send a message through the encrypted channel to request a response "
        "from the server. The default is 0, indicating that these messages will not be sent to the server, or 300 "
        "if the BatchMode option is set (Debian-specific). ProtocolKeepAlives and SetupTimeOut are Debian-specific "
        "compatibility aliases for this option.")
    assert "token: %h; description: The remote hostname." in records  # what the TOKENS section lists
    assert "file: /etc/ssh/ssh_config; description: Systemwide configuration file." in " ".join(records)
    headings = blocks(parsed, BlockKind.HEADING)
    assert {"NAME", "DESCRIPTION", "PATTERNS", "TOKENS", "FILES"} <= set(headings)
    assert section_of(parsed, "term: ServerAliveInterval") == ["DESCRIPTION"]
    assert section_of(parsed, "A pattern consists of zero or more") == ["PATTERNS"]
    # an enumerated and a bulleted list: list items, their marks no text
    items = blocks(parsed, BlockKind.LIST_ITEM)
    assert items[:3] == ["command-line options", "user's configuration file (~/.ssh/config)",
                         "system-wide configuration file (/etc/ssh/ssh_config)"]
    assert "SendEnv LANG LC_*" in items
    assert "Host *.co.uk" in blocks(parsed, BlockKind.CODE)  # a literal display


def test_mdoc_options_flags_and_references_read_as_groff_sets_them():
    parsed = parse((PAGES / "ssh.1").read_bytes(), "ssh.1")
    assert parsed.title == "ssh - OpenSSH remote login client"
    synopsis = parsed.text[parsed.text.index("ssh [-46"):]
    assert synopsis.startswith("ssh [-46AaCfGgKkMNnqsTtVvXxYy] [-B bind_interface] [-b bind_address] [-c cipher_spec] "
                               "[-D [bind_address:]port]")
    # .Sm off joins the words of a form; the first after it is still spaced from the text before
    assert "specified as either [user@]hostname or a URI of the form ssh://[user@]hostname[:port]." in parsed.text
    records = blocks(parsed, BlockKind.RECORD)
    assert "option: -4; description: Forces ssh to use IPv4 addresses only." in records
    # four tags in a row (each .It Xo ... .Xc over lines) share the description after them
    assert starting(records, "option: -L ").startswith(
        "option: -L [bind_address:]port:host:hostport, -L [bind_address:]port:remote_socket, "
        "-L local_socket:host:hostport, -L local_socket:remote_socket; description: Specifies that connections")
    assert "S. Lehtinen and C. Lonvick, The Secure Shell (SSH) Protocol Assigned Numbers, RFC 4250, January 2006." \
        in blocks(parsed, BlockKind.PARAGRAPH)
    assert section_of(parsed, "S. Lehtinen") == ["STANDARDS"]


def test_tmux_keys_commands_and_key_tables_are_records_and_rows():
    parsed = parse((PAGES / "tmux.1").read_bytes(), "tmux.1")
    assert parsed.title == "tmux - terminal multiplexer"
    assert "tmux [-2CDluvV] [-c shell-command] [-f file] [-L socket-name] [-S socket-path] [-T features] " \
           "[command [flags]]" in blocks(parsed, BlockKind.PARAGRAPH)
    records = blocks(parsed, BlockKind.RECORD)
    assert "option: -c shell-command; description: Execute shell-command using the default shell." in " ".join(records)
    assert "term: C-b; description: Send the prefix key (C-b) through to the application." in records
    # a key named "-" is a key described, neither a bullet nor an option
    assert "term: -; description: Delete the most recently copied buffer of text." in records
    assert "term: [; description: Enter copy mode to copy text or view the history." in records
    assert section_of(parsed, "term: C-b") == ["DEFAULT KEY BINDINGS"]
    command = starting(records, "term: choose-client ")
    assert command.startswith("term: choose-client [-NrZ] [-F format] [-f filter] [-K key-format] [-O sort-order] "
                              "[-t target-pane] [template]; description: Put a pane into client mode")
    # the key table inside the command's description: rows under its bold first row
    rows = blocks(parsed, BlockKind.TABLE_ROW)
    assert "Key: Enter; Function: Choose selected client" in rows and "Key: q; Function: Exit mode" in rows
    assert starting(blocks(parsed, BlockKind.PARAGRAPH), "After a client is chosen, ‘%%’ is replaced by the client "
                    "name in template and the result executed as a command.")
    assert parsed.text.index("Key: Enter") < parsed.text.index("After a client is chosen")


def test_mdoc_macros_that_print_words_of_their_own():
    """Lines as BSD pages write them (OpenBSD's ls(1), cat(1), printf(3)): ``.Ex``, ``.St``,
    ``.At``, ``.Bx``, a function's ``.Fn``, a nested list inside a tagged item."""
    source = rb""".Dd $Mdocdate: March 31 2022 $
.Dt LS 1
.Os
.Sh NAME
.Nm ls
.Nd list directory contents
.Sh DESCRIPTION
The options are as follows:
.Bl -tag -width Ds
.It Fl C
Force multi-column output; this is the default when output is to a terminal.
.It Fl -color Ns = Ns Ar when
Colour the output
.Po
see
.Xr terminfo 5
.Pc :
.Bl -tag -width "never" -compact
.It Cm always
always,
.It Cm never
never.
.El
The default is
.Dq never .
.El
.Pp
It calls
.Fn stat "const char *path" "struct stat *sb"
for each file.
.Sh EXIT STATUS
.Ex -std ls
.Sh STANDARDS
The
.Nm
utility is compliant with the
.St -p1003.1-2008
specification.
.Sh HISTORY
An
.Nm
command appeared in
.At v1 ;
.Bx 4.4
added
.Fl o .
"""
    parsed = parse(source, "ls.1")
    assert parsed.title == "ls - list directory contents"
    records = blocks(parsed, BlockKind.RECORD)
    assert "option: -C; description: Force multi-column output, this is the default when output is to a terminal." \
        in records
    assert "option: --color=when; description: Colour the output (see terminfo(5)): always: always, never: never. " \
           "The default is “never”." in records
    assert "It calls stat(const char *path, struct stat *sb) for each file." in parsed.text
    assert "The ls utility exits 0 on success, and >0 if an error occurs." in parsed.text
    assert "compliant with the IEEE Std 1003.1-2008 (“POSIX.1”) specification." in parsed.text
    assert "An ls command appeared in Version 1 AT&T UNIX; 4.4BSD added -o." in parsed.text


# ssh(1) and tmux(1) as ``MANWIDTH=80 man -P cat`` prints them (groff's mdoc), abridged: the body
# at five columns, a short tag with its description on its line, a compact list of keys, and
# mdoc's footer ("BSD  date  BSD").
RENDERED = """\
SSH(1)                    BSD General Commands Manual                   SSH(1)

NAME
     ssh — OpenSSH remote login client

SYNOPSIS
     ssh [-46AaCfGgKkMNnqsTtVvXxYy] [-B bind_interface] [-b bind_address]
         [-c cipher_spec] [-D [bind_address:]port] [-E log_file]

DESCRIPTION
     The options are as follows:

     -4      Forces ssh to use IPv4 addresses only.

     -6      Forces ssh to use IPv6 addresses only.

     -A      Enables forwarding of connections from an authentication agent
             such as ssh-agent(1).  This can also be specified on a per-host
             basis in a configuration file.

     -a      Disables forwarding of the authentication agent connection.

     -B bind_interface
             Bind to the address of bind_interface before attempting to con‐
             nect to the destination host.

DEFAULT KEY BINDINGS
     The default command key bindings are:

           C-b         Send the prefix key (C-b) through to the application.
           C-o         Rotate the panes in the current window forwards.
           -           Delete the most recently copied buffer of text.
           0 to 9      Select windows 0 to 9.
           o           Select the next pane in the current window.

BSD                            November 28, 2022                           BSD
"""


def test_an_mdoc_page_rendered_to_text_has_its_sections_and_option_records():
    parsed = parse(RENDERED.encode(), "ssh.1.txt")
    assert parsed.mime == "text/x-manpage" and parsed.title == "ssh — OpenSSH remote login client"
    records = blocks(parsed, BlockKind.RECORD)
    assert records[:5] == [
        "option: -4; description: Forces ssh to use IPv4 addresses only.",
        "option: -6; description: Forces ssh to use IPv6 addresses only.",
        "option: -A; description: Enables forwarding of connections from an authentication agent such as ssh-agent(1). "
        "This can also be specified on a per-host basis in a configuration file.",
        "option: -a; description: Disables forwarding of the authentication agent connection.",
        "option: -B bind_interface; description: Bind to the address of bind_interface before attempting to connect to "
        "the destination host.",
    ]
    assert records[5:] == [  # keys, none of them a bullet ("-", "o")
        "term: C-b; description: Send the prefix key (C-b) through to the application.",
        "term: C-o; description: Rotate the panes in the current window forwards.",
        "term: -; description: Delete the most recently copied buffer of text.",
        "term: 0 to 9; description: Select windows 0 to 9.",
        "term: o; description: Select the next pane in the current window.",
    ]
    assert section_of(parsed, "option: -4") == ["DESCRIPTION"]
    assert "BSD" not in parsed.text and "November 28, 2022" not in parsed.text  # the footer is no heading
    assert blocks(parsed, BlockKind.HEADING) == ["NAME", "SYNOPSIS", "DESCRIPTION", "DEFAULT KEY BINDINGS"]


def test_a_page_whose_licence_is_an_ignored_block_is_an_mdoc_page():
    """ssh-copy-id(1) opens with its licence in ``.ig`` ... ``..``, text roff never prints: it was
    read as plain text, requests and all. Its synopsis joins words as mdoc does."""
    parsed = parse(gzip.compress((PAGES / "ssh-copy-id.1").read_bytes()), "ssh-copy-id.1.gz")
    assert parsed.mime == "text/x-manpage"
    assert parsed.title == "ssh-copy-id - use locally available keys to authorise logins on a remote machine"
    assert "Redistribution" not in parsed.text
    assert blocks(parsed, BlockKind.PARAGRAPH)[1:3] == [
        "ssh-copy-id [-f] [-n] [-s] [-i [identity_file]] [-p port] [-o ssh_option] [user@]hostname",  # .Ns after .Op
        "ssh-copy-id -h | -?",  # .Fl before a delimiter is its dash
    ]
    assert "ssh-copy-id is a script that uses ssh(1) to log into a remote machine." in parsed.text
