"""The ``craig`` command for operators, on click: one module per command group.

    craig serve [--host H] [--port P]              the API (+ workers in memory/embedded)
    craig worker                                   the background loops alone
    craig db upgrade [REV] | db downgrade REV      migrations
    craig token --sub UUID --role ROLE --name NAME [--ttl SECONDS]
    craig status [--json]                          queues, backlogs, slots
    craig dlx list [--limit N]                     dead-lettered events
    craig dlx replay (--id ID ... | --all) [--limit N]
    craig config [--effective]                     the settings reference, or the values in force
    craig keys rotate [--batch-size N]             re-encrypt fields under the newest key

``craig --help`` is the manual (profiles, settings, exit codes).
"""

from craig.entrypoints.cli.root import main

__all__ = ["main"]
