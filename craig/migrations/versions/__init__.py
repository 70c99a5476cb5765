"""One module per revision, ``<rev>_<slug>.py``; Alembic skips this ``__init__``."""
