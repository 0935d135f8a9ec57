"""Cloud adapters of the ports (boto3): S3 today; DynamoDB, OpenSearch and Bedrock embeddings with the AWS issue."""
