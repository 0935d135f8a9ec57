"""The AWS adapters of the ports (boto3): DynamoDB records, S3 objects and Amazon Textract (the
OpenSearch index is :mod:`citewell.index.opensearch`). The Lambda runtime that runs on them is
:mod:`citewell.lambdas`."""
