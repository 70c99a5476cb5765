"""Use cases of a case's lifecycle (change, close, reopen, unassign, find), one per module."""
