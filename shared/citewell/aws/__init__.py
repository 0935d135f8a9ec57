"""The AWS adapters of the ports (boto3): S3 objects and Amazon Textract (the DynamoDB records are
:mod:`citewell.metadata.dynamodb`, the OpenSearch index :mod:`citewell.index.opensearch`). The
Lambda runtime that runs on them is :mod:`citewell.lambdas`."""
