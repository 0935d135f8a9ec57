"""Textract's job completions: SQS-delivered SNS notifications in, the parse of each job's upload run again."""

from citewell.lambdas.handlers import ocr_handler

lambda_handler = ocr_handler()
