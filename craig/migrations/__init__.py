"""Craig's Alembic migrations, shipped inside the package: ``env.py``, ``script.py.mako`` and
``versions/``. Alembic loads these files by path (``craig.adapters.postgres.migrations`` points it
here); nothing imports them as modules."""
