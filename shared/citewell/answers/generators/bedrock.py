"""Answers and follow-up rewrites from Amazon Bedrock: the answer prompts over
:class:`citewell.llm.bedrock.BedrockModel` (ConverseStream when a listener wants the draft as it
is written, the streaming server's)."""

from __future__ import annotations

from citewell.answers.generators.model import ModelAnswers
from citewell.llm.bedrock import BedrockModel


class BedrockGenerator(ModelAnswers, BedrockModel):
    pass
