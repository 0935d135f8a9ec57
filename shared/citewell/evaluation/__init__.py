"""Measuring citewell on labelled data: :mod:`.retrieval` (the right documents for a question,
scored with ir-measures) and :mod:`.answers` (the right answer, cited, or an honest refusal).
They sit above the search, the answers and the conversations they drive."""
