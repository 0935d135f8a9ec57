"""Answer units on the kinds of text real documents carry: man pages, NEWS files, READMEs and
configuration manuals, where the answer is a flag, a variable or a stated default, often in the
sentence after the one that matches the question best."""

from __future__ import annotations

from citewell.answers.extractive.eligible import answers_alone
from citewell.answers.extractive.kinds import Wants
from citewell.answers.extractive.question import wants
from citewell.answers.extractive.quoting import quoted_by
from citewell.answers.extractive.scoring import score_support
from citewell.answers.extractive.units import companions, units_of
from citewell.answers.extractive.vectors import UnitEmbeddings
from citewell.answers.service import ask
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from citewell.models.identity import Identity

DEV = Identity(tenant="realfiles", roles=frozenset({"dev"}))


def item(text: str, headings: tuple[str, ...] = (), title: str = "T") -> EvidenceItem:
    return EvidenceItem(ref="S1", document_id="d", revision="r", title=title, section_path=list(headings), text=text,
                        spans=[EvidenceSpan(chunk_id="d#0#0", section_path=list(headings), start=0, end=len(text))], rank=1)


def unit(text: str, wanted: str):
    (found,) = [u for u in units_of(item(text)) if wanted in u.text]
    return found


def test_what_manuals_write_as_code_is_code_and_a_hyphenated_word_is_not():
    for sentence in ("Set PYTHON_DOTENV_DISABLED=1 to disable it.", "To stop tracking a file, use git rm --cached.",
                     "Add -m to create the home directory.", "Pass force_list to always get a list.",
                     "Use path.win32 for Windows paths.", "It raises a ConnectionError.", "Edit /etc/fstab first.",
                     "Set Persistent= in the timer.", "They go into the $GIT_DIR/info/exclude file.",
                     "ENCRYPT_METHOD is set to SHA512.", "* SM3 hash function, contributed upstream."):
        assert units_of(item(sentence))[0].holds(Wants.CODE), sentence
    for sentence in ("Useful when you can't modify third-party package calls.", "It runs on any operating system.",
                     "The NASA team met in 2009."):  # capitals alone, or digits alone, are no code
        assert not units_of(item(sentence))[0].holds(Wants.CODE), sentence


def test_manual_questions_want_a_flag_or_variable_and_default_questions_a_stated_default():
    assert Wants.CODE in wants("Which option gives me more information?")
    assert Wants.CODE in wants("Which environment variable points fontconfig at another file?")
    assert Wants.CODE in wants("A file is already tracked. How do I stop tracking it?")
    assert Wants.DEFAULT in wants("Cargo release profile default codegen-units")
    assert Wants.DEFAULT in wants("What does ninja print when NINJA_STATUS is not set?")
    assert Wants.CODE in wants("Which libffi call allocates the memory for a closure?")
    assert Wants.CODE not in wants("What did the Normans call the city?")
    # a "when" that sets up the ask asks for no time; one that asks does
    assert Wants.DATE not in wants("When writing a custom JMESPath function in Python, what prefix must the method have?")
    assert Wants.DATE not in wants("When gzip is found at configure time, what gzip command does man use?")
    assert Wants.DATE in wants("When was Debian 12 released?") and Wants.DATE in wants("When do carried days expire?")
    # "status" is one status, not a list of them; "tools" are several
    assert Wants.LIST not in wants("What progress status does ninja print when NINJA_STATUS is not set?")
    assert Wants.LIST in wants("Which tools does ninja have?")
    assert Wants.LIST in wants("In what order does the linker search the directories?")  # an order is a sequence
    assert Wants.LIST in wants("In what order of precedence are the sources applied?")
    # a version is asked for whatever the product's name holds: "Node.js" as much as "Python"
    for question in ("In which Node.js version was path.matchesGlob() added?", "Which Python version added it?",
                     "What C++ release dropped auto_ptr?"):
        assert Wants.NUMBER in wants(question), question
    # an exit status is a number; a question naming one and asking what it means wants neither
    assert Wants.NUMBER in wants("What exit code does apt-get return when an error occurs?")
    assert units_of(item("apt-get returns zero on normal operation, decimal 100 on error."))[0].holds(Wants.NUMBER)
    for question in ("xsltproc returned 4. What does that code mean?", "useradd exited with status 9 - what went wrong?",
                     "What does errno 134 mean on Linux?", "What does the backup tool's exit status 3 indicate?"):
        assert not wants(question) & {Wants.CODE, Wants.NUMBER}, question
    assert units_of(item("The default is 256 for incremental builds, and 16 for non-incremental builds."))[0].holds(Wants.DEFAULT)
    assert units_of(item("Specify the accuracy the timer shall elapse with. Defaults to 1min."))[1].holds(Wants.DEFAULT)
    # naming a default is not stating one
    assert not units_of(item("The element holds the default interval between checks."))[0].holds(Wants.DEFAULT)
    assert not units_of(item("[profile.release.build-override]\nopt-level = 0\ncodegen-units = 256"))[0].holds(Wants.DEFAULT)


def test_a_kind_the_question_already_names_is_no_answer_and_the_release_heading_completes_a_news_item():
    news = "Changes in Wget 1.19.5\n\n* Fix cookie injection (CVE-2018-0494)\n\n* Fix a buffer overflow in the FTP code"
    units = units_of(item(news, ("Changes in Wget 1.19.5",)))
    question = "Which wget release fixed the cookie injection vulnerability CVE-2018-0494?"
    fix = next(u for u in units if "cookie" in u.text)
    assert fix.holds(Wants.NUMBER) and not fix.holds(Wants.NUMBER, question)  # its only numbers are the CVE's
    assert companions(units, wants(question), question)[units.index(fix)] is units[0]  # the release heading


def test_a_changelog_entry_asked_which_release_is_completed_by_its_release_heading_not_the_next_entry():
    """The next entry names a flag (a code, as "function" asks for), and shares "benchmark" with the
    question; the release asked for is the heading the entry sits under."""
    changelog = ("v5.2.0 (2025-10-30)\n\n* Added support for a per-round ``teardown`` function to pedantic mode.\n\n"
                 "* Added --benchmark-time-unit option.")
    units = units_of(item(changelog, ("Changelog", "v5.2.0 (2025-10-30)")))
    entry = next(u for u in units if "teardown" in u.text)
    question = "Which pytest-benchmark release added a per-round teardown function to pedantic mode?"
    assert companions(units, wants(question), question)[units.index(entry)] is units[0]
    unasked = "What function does pytest-benchmark's pedantic mode run after each round?"  # asks no release
    assert companions(units, wants(unasked), unasked)[units.index(entry)] is not units[0]


def test_an_option_description_is_completed_by_the_option_it_is_under():
    readme = "OPT_STRICT_INTEGER\n\nEnforce 53-bit limit on integers. The limit is otherwise 64 bits."
    units = units_of(item(readme, ("orjson", "option", "OPT_STRICT_INTEGER")))
    question = "orjson option to enforce the 53-bit integer limit"
    assert companions(units, wants(question), question)[1] is units[0]


def test_a_sentence_is_completed_by_a_later_one_of_its_paragraph_that_names_the_flag():
    manual = ("Memcheck also reports uses of uninitialised values, most commonly with the message \"Conditional jump "
              "or move depends on uninitialised value(s)\". It can be difficult to determine the root cause of these "
              "errors. Try using the --track-origins=yes to get extra information. This makes Memcheck run slower.")
    units = units_of(item(manual, ("Interpreting Memcheck's output",)))
    question = ("Memcheck says 'Conditional jump or move depends on uninitialised value(s)' and I can't tell where the "
                "value came from. Which option gives me more information?")
    beside = companions(units, wants(question), question)
    assert beside[0] is units[2]  # the flag two sentences on, sharing "information"
    quieter = "Which option makes Memcheck quieter?"  # the flag's sentence holds no word of it that the first lacks
    assert companions(units, wants(quieter), quieter)[0] is None
    # a configuration file describes a setting, then states its default on the next line
    config = "The permissions mode for home directories of non-system users.\nDefault: DIR_MODE=0700"
    units = units_of(item(config))
    question = "What permission mode does adduser give the home directory of a new user unless configured otherwise?"
    assert [u.text for u in units] == ["The permissions mode for home directories of non-system users.", "Default: DIR_MODE=0700"]
    assert companions(units, wants(question), question)[0] is units[1]
    apart = units_of(item("The permissions mode for home directories.\n\nDefault: DIR_MODE=0700"))  # another block
    assert companions(apart, wants(question), question)[0] is None


def test_a_dot_of_a_file_name_ends_no_sentence_and_a_colon_that_names_the_code_is_an_answer():
    readme = "Set PYTHON_DOTENV_DISABLED=1 to disable load_dotenv() from loading .env files or streams. Useful in production."
    assert [u.text for u in units_of(item(readme))] == [
        "Set PYTHON_DOTENV_DISABLED=1 to disable load_dotenv() from loading .env files or streams.", "Useful in production."]
    page = ("To achieve consistent results when working with Windows file paths on any operating system, use path.win32:"
            "\n\nOn POSIX and Windows:\n\npath.win32.basename('C:\\\\temp\\\\myfile.html');")
    units = units_of(item(page))
    question = "Which path API gives consistent results for Windows paths on any OS?"
    assert answers_alone(units[0], units, frozenset(wants(question)), question=question)
    assert not answers_alone(units[0], units, frozenset({Wants.LIST}), question="What are the path methods?")


def test_the_answer_built_on_a_cases_sentence_quotes_the_flag_after_it_in_the_order_written(embedder):
    manual = ("It can be difficult to find where an uninitialised value came from. Memcheck cannot tell by itself. "
              "Try using the --track-origins=yes to get extra information.")
    question = "Which option gives me more information about where an uninitialised value came from?"
    support = score_support(UnitEmbeddings(embedder), question, [item(manual)], every_unit=True)
    first = next(rank for rank, u in enumerate(support.units) if u.text.startswith("It can be difficult"))
    assert [u.text for u in quoted_by(question, support, first)] == [
        "It can be difficult to find where an uninitialised value came from.",
        "Try using the --track-origins=yes to get extra information."]


def test_a_man_page_question_for_a_default_quotes_the_stated_default_not_an_examples_value(services):
    page = b"""CARGO-PROFILES(5)

NAME
       cargo-profiles - compiler settings of a build

CODEGEN-UNITS
       The codegen-units setting controls the -C codegen-units flag which controls how many code
       generation units a crate will be split into. More code generation units allows more of a crate
       to be processed in parallel possibly reducing compile time, but may produce slower code.

       This option takes an integer greater than 0.

       The default is 256 for incremental builds, and 16 for non-incremental builds.

BUILD OVERRIDES
       Profiles can be overridden for build scripts and proc macros:

           [profile.release.build-override]
           opt-level = 0
           codegen-units = 256
"""
    (outcome,) = ingest(services, [IngestRequest(document_id="cargo-profiles.5.txt", tenant="realfiles",
                                                 allowed_roles=frozenset({"dev"}), data=page, filename="cargo-profiles.5.txt")])
    assert outcome.status == "published", outcome
    answer = ask(services, DEV, "Cargo release profile default codegen-units")
    shown = answer.answer or ""
    assert "16 for non-incremental builds" in shown and "opt-level = 0" not in shown, answer


def test_a_negation_in_what_sets_up_the_question_or_in_its_condition_is_not_asked_for():
    from citewell.answers.extractive.question import asks_what_is_not

    assert asks_what_is_not("Which port does not accept hazardous cargo?")
    assert asks_what_is_not("What did the treaty not cover?")
    assert not asks_what_is_not("What progress status does ninja print when NINJA_STATUS is not set?")
    assert not asks_what_is_not("In production I want load_dotenv() calls in third-party code to do nothing. How?")
    assert not asks_what_is_not("I can't tell where the value came from. Which option gives me more information?")
    assert not asks_what_is_not("How many SHA rounds does libc use if I don't set SHA_CRYPT_MIN_ROUNDS?")


def test_a_passage_naming_a_sibling_of_what_was_asked_names_it_instead():
    """A passage about full-time staff, IPv4 or error E1028 is a near miss for a question about
    part-time staff, IPv6 or E1027: it lacks the asked term and holds one of the same shape."""
    from citewell.answers.extractive.question import identifiers, names_a_sibling

    def sibling(question: str, text: str) -> bool:
        return names_a_sibling(identifiers(question), text.lower())

    assert sibling("How many days do part-time employees get?", "Full-time employees receive 26 days.")
    assert sibling("Which key turns on IPv6 forwarding?", "Uncomment the next line to enable forwarding for IPv4.")
    assert sibling("What does error E1027 mean?", "code: E1028; meaning: Sensor drift")
    assert sibling("Which release fixed CVE-2018-0494?", "Fix cookie injection (CVE-2017-0494).")
    assert not sibling("How many days do part-time employees get?", "Part-time employees get 14 days; full-time 26.")
    assert not sibling("What does error E1027 mean?", "code: E1027; meaning: Twistlock sensor disagrees")
    assert not sibling("How many days off after 5 years?", "After 10 years staff get 29 days.")  # numbers alone: not this feature
    assert not sibling("What is the default for ext4?", "The default block size is 4096.")


def test_a_question_that_sets_out_a_situation_then_asks_is_split_at_its_last_sentence():
    from citewell.answers.extractive.question import final_ask

    assert final_ask("Wildcard limits don't apply to root. How do I set a limit for the root account?") == \
        "How do I set a limit for the root account?"
    assert final_ask("xsltproc returned 4. What does that code mean?") == "What does that code mean?"
    assert final_ask("What is the default for e.g. the timeout?") is None  # one sentence, an abbreviation inside
    assert final_ask("How many days of leave do I get?") is None
