"""What is left of the AWS adapters here: the Cognito sign-in (the S3 objects are
:mod:`citewell.objects.s3`, the DynamoDB records :mod:`citewell.metadata.dynamodb`, the
OpenSearch index :mod:`citewell.index.opensearch`, Textract :mod:`citewell.ocr.textract`). The
Lambda runtime is :mod:`citewell.lambdas`."""
