"""Grounded answers: evidence read back from the records, generated, verified, recorded, cached."""
