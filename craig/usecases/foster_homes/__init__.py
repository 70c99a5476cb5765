"""Use cases of foster homes (change, page, placement history), one per module."""
