"""The AWS adapters of the ports (boto3): DynamoDB records, S3 objects, the OpenSearch index and
Amazon Textract. The Lambda runtime that runs on them is :mod:`citewell.lambdas`."""
