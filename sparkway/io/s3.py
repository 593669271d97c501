"""``pw.io.s3``: settings of an S3 bucket (AWS, or any S3-compatible store).

Used today by ``pw.persistence.Backend.s3``; the S3 readers and writers of Pathway are
not implemented yet.
"""

from sparkway.persistence.s3 import AwsS3Settings

__all__ = ["AwsS3Settings"]
