"""The ObjectStore adapters (:class:`citewell.ports.ObjectStore`), side by side: a folder
(:mod:`citewell.objects.folder`) and an S3 bucket (:mod:`citewell.objects.s3`, on boto3)."""

STREAM_BLOCK = 1024 * 1024  # bytes a stream's block holds at most (one ranged GET on S3)
