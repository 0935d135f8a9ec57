"""The MetadataStore adapters (every record port of :mod:`citewell.ports.records` in one store),
side by side: SQLite in one file (:mod:`citewell.metadata.sqlite`) and one DynamoDB table
(:mod:`citewell.metadata.dynamodb`). Each module imports only its own engine."""
