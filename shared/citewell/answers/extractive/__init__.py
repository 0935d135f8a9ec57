"""The extractive answerer: the local default generator, which quotes the units of the evidence
that answer a question, or refuses. No model service: its fitted models and encoder ship here,
beside the code that loads them. Nothing outside ``citewell.answers`` imports it.

From the bottom up: ``kinds`` (the kinds of answer and how each is found in a text),
``question`` (what a question asks), ``units`` (a passage cut into units, and each unit's
companion), ``features`` (the typed feature rows the models read, and a scored ranking),
``refusal`` (the fitted models), ``unit_encoder`` (the packaged encoder units are embedded
with), ``cross_encoder`` (the answer verifier, which reads a question with a unit; its model does
not ship), ``vectors`` (unit vectors, cached, computed only where they can matter), ``quoting``
(what an answer quotes beside its best unit), ``eligible`` (which units an answer may be built
on), ``direct`` (the value an answer states first), ``scoring`` (units scored and ranked) and
``generator`` (``ExtractiveGenerator``, composing them).
"""
