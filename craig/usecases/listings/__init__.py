"""Keyset pages of the older lists (contacts, attachments, partners, rule sets), one use case per module."""
