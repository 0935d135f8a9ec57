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

# Text Embeddings Inference's own /rerank (its OpenAPI document, docs/openapi.json of
# huggingface/text-embeddings-inference 1.7: RerankResponse is a list of Rank, ``index`` and
# ``score``, ``text`` when return_text was asked; the quick tour's request sends two texts). Every
# text comes back, best first, whatever was asked for.
TEI_REQUEST = {"query": "What is Deep Learning?", "texts": ["Deep Learning is not...", "Deep learning is..."]}
TEI_FORMAT = [
    {"index": 1, "score": 0.9976404},
    {"index": 0, "score": 0.12536296, "text": "Deep Learning is not..."},
]

# Bedrock Agent Runtime's Rerank reply (botocore's service model for bedrock-agent-runtime
# ``Rerank``: results of index, relevanceScore and an optional document).
BEDROCK_FORMAT = {
    "results": [
        {"index": 1, "relevanceScore": 0.91},
        {"index": 0, "relevanceScore": 0.12},
    ],
}
