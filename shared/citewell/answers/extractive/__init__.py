"""The extractive answerer: the local default generator, which quotes the units of the evidence
that answer a question, or refuses. No model service: its fitted models and encoder ship here,
beside the code that loads them. Nothing outside ``citewell.answers`` imports it."""
