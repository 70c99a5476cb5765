"""``craig status``: one screen for the operator at 3 a.m., or one JSON object for a script."""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any

import attrs

from craig.entrypoints.container import Container
from craig.entrypoints.operations import backlogs
from craig.entrypoints.operations.backlogs import Entry, Reader
from craig.entrypoints.operations.intake_queue import intake_queue


@attrs.frozen
class Section:
    key: str  # in the JSON object
    title: str  # in the table
    read: Reader


SECTIONS: tuple[Section, ...] = (
    Section("idempotency", "idempotency", backlogs.idempotency),
    Section("outbox", "outbox", backlogs.outbox),
    Section("inbox", "inbox", backlogs.inbox),
    Section("unrouted_events", "unrouted events", backlogs.unrouted_events),
    Section("attachments", "attachments", backlogs.attachments),
    Section("placements", "placements", backlogs.placements),
    Section("send_jobs", "send jobs", backlogs.send_jobs),
    Section("intake_queue", "intake queue", intake_queue),
)


@attrs.frozen
class StatusReport:
    """Each section's entries, or the one-line error that kept it from being read."""

    sections: tuple[tuple[Section, list[Entry] | str], ...]

    def table(self) -> dict[str, dict[str, Any]]:
        """Section title -> label -> value as the table shows it."""
        return {
            section.title: {"error": read} if isinstance(read, str) else {e.label: e.table_value for e in read}
            for section, read in self.sections
        }

    def problems(self) -> list[str]:
        """What kept the report from being whole, one phrase each: a dependency that is down, a
        section that could not be read (``craig status`` then exits 1)."""
        found: list[str] = []
        for section, read in self.sections:
            if isinstance(read, str):
                found.append(f"{section.title} not read")
            elif section is DEPENDENCIES:
                found += [f"{e.label} down" for e in read if str(e.value).startswith("down")]
        return found

    def as_json(self) -> dict[str, dict[str, Any]]:
        """Section key -> entry key -> value; ages in seconds (null when there is nothing)."""
        report: dict[str, dict[str, Any]] = {}
        for section, read in self.sections:
            values: dict[str, Any] = {}
            if isinstance(read, str):
                values["error"] = read
            for entry in [] if isinstance(read, str) else read:
                *parents, last = entry.key
                target = values
                for parent in parents:
                    target = target.setdefault(parent, {})
                target[last] = entry.value
            report[section.key] = values
        return report


def _version() -> str:
    try:
        return importlib.metadata.version("craig")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


async def _about(container: Container) -> list[Entry]:
    settings = container.settings()
    return [
        Entry(("profile",), "profile", settings.profile.value),
        Entry(("data_dir",), "data dir", str(settings.data_dir)),
        Entry(("version",), "version", _version()),
    ]


async def _dependencies(container: Container) -> list[Entry]:
    """Each dependency's readiness check: ``up``, or ``down: <why>``."""
    entries = []
    for name, check in container.health_checks().items():
        try:
            await check()
            state = "up"
        except Exception as error:
            state = f"down: {error}"
        entries.append(Entry((name,), name, state))
    return entries


ABOUT = Section("craig", "craig", _about)
DEPENDENCIES = Section("dependencies", "dependencies", _dependencies)


async def collect_report(container: Container) -> StatusReport:
    """Every section; one that cannot be read carries its error instead of failing the report."""
    sections: list[tuple[Section, list[Entry] | str]] = []
    for section in (ABOUT, DEPENDENCIES, *SECTIONS):
        try:
            sections.append((section, await section.read(container)))
        except Exception as error:
            sections.append((section, f"{type(error).__name__}: {error}"))
    return StatusReport(tuple(sections))


async def section_table(key: str, container: Container) -> dict[str, Any]:
    """One section as the table shows it: label -> value."""
    (section,) = [section for section in SECTIONS if section.key == key]
    return {entry.label: entry.table_value for entry in await section.read(container)}


async def collect_status(container: Container) -> dict[str, dict[str, Any]]:
    """The report as the table shows it: section title -> label -> value."""
    return (await collect_report(container)).table()


def format_status(report: dict[str, dict[str, Any]]) -> str:
    lines = []
    for section, values in report.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if isinstance(value, dict):
                shown = ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
            else:
                shown = str(value)
            lines.append(f"  {key:<32} {shown}")
    return "\n".join(lines)


def format_json(report: StatusReport) -> str:
    return json.dumps(report.as_json(), indent=2, default=str)
