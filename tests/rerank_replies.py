"""Rerank replies as the providers' documentation shows them (indices and scores as printed;
only the document texts shortened), so the HTTP reranker is tested on the wire format servers
really send: extra fields, results ordered by score, fewer results than documents."""

from __future__ import annotations

# OpenVINO Model Server's Cohere-API rerank endpoint, "Example response"
# (https://docs.openvino.ai/2025/model-server/ovms_docs_rest_api_rerank.html): two documents.
COHERE_FORMAT = {
    "results": [
        {"index": 0, "relevance_score": 0.3886180520057678},
        {"index": 1, "relevance_score": 0.0055549247190356255},
    ]
}

# Jina AI's rerank format as New API documents it (https://docs.newapi.pro/api/jinaai-rerank):
# top_n 3 of three documents sent, two returned, each with its document and a usage block.
JINA_FORMAT = {
    "results": [
        {"document": {"text": "Organic skincare for sensitive skin with aloe vera and chamomile..."}, "index": 0,
         "relevance_score": 0.8783142566680908},
        {"document": {"text": "Bio-Hautpflege für empfindliche Haut mit Aloe Vera und Kamille..."}, "index": 2,
         "relevance_score": 0.7624675869941711},
    ],
    "usage": {"prompt_tokens": 815, "completion_tokens": 0, "total_tokens": 815},
}

# Xinference's /v1/rerank (https://inference.readthedocs.io/en/v2.10.0/models/model_abilities/rerank.html):
# an id, and each result's document as a string; its five documents, the first three results shown.
XINFERENCE_FORMAT = {
    "id": "480dca92-8910-11ee-b76a-c2c8e4cad3f5",
    "results": [
        {"index": 0, "relevance_score": 0.9999247789382935, "document": "A man is eating food."},
        {"index": 1, "relevance_score": 0.2564932405948639, "document": "A man is eating a piece of bread."},
        {"index": 3, "relevance_score": 0.00003955026841140352, "document": "A man is riding a horse."},
    ],
}

# Bedrock Agent Runtime's Rerank reply (botocore's service model for bedrock-agent-runtime
# ``Rerank``: results of index, relevanceScore and an optional document).
BEDROCK_FORMAT = {
    "results": [
        {"index": 1, "relevanceScore": 0.91},
        {"index": 0, "relevanceScore": 0.12},
    ],
}
