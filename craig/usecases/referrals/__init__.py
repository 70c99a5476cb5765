"""Use cases of the intake queue (list, read, screen referrals), one per module."""
