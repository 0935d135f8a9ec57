"""Generator adapters: extractive (local, no model service), OpenAI-compatible over httpx, Bedrock Converse."""
