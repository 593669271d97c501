"""Real servers the tests start on loopback: PostgreSQL, an S3 endpoint, a Kafka broker."""
