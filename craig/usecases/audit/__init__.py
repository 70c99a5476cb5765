"""Use cases of the audit trail, one per module: sealing, verifying, the head, reading, purging."""
