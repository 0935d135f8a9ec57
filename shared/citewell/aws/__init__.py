"""Cloud adapters of the ports (boto3): S3 today; DynamoDB, OpenSearch and Bedrock embeddings with the AWS issue."""

# What every traced handler tells Powertools' Tracer: X-Ray keeps what a traced function returns
# or raises unless told not to (the default records both), and responses and exception objects
# carry passages, answers and whole texts.
UNTRACED = {"capture_response": False, "capture_error": False}
