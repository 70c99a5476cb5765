"""The audit hash chain: sealing entries into it, and finding where it was tampered with.

A chain is a sequence of links ``(seq, entry id, prev_hash, hash)`` with contiguous ``seq`` from
its start. The first link follows the start's anchor: :data:`GENESIS_HASH` at seq 1, or after a
purge the hash of the last purged link. Verification walks the links in ``seq`` order with
:class:`ChainWalk` and, at the first link that does not fit, :func:`classify` names what was
done to it from a few facts about the rest of the chain (:class:`BreakContext`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime
from typing import Literal
from uuid import UUID

import attrs

from craig.domain.audit import GENESIS_HASH, AuditEntry, chain_hash
from craig.domain.errors import InvalidInput

HASH_BYTES = 32


class BreakReason(enum.StrEnum):
    #: The entry (or its stored hashes) differs from what was sealed.
    CHANGED = "changed"
    #: An entry, or a link of the chain, is missing.
    REMOVED = "removed"
    #: A link was put into the chain that the chain around it does not include.
    INSERTED = "inserted"
    #: A link of the chain stands before links it was sealed after.
    OUT_OF_ORDER = "out_of_order"
    #: The chain is consistent but does not pass through the head expected of it.
    REWRITTEN = "rewritten"


@attrs.frozen
class ChainHead:
    """The newest link: its ``seq`` (0 before anything was sealed) and ``hash``."""

    seq: int
    hash: bytes


GENESIS = ChainHead(0, GENESIS_HASH)


@attrs.frozen
class ChainStart:
    """Where the kept chain begins: its first ``seq`` and the hash its first link follows."""

    first_seq: int = 1
    anchor: bytes = GENESIS_HASH


@attrs.frozen
class ChainLink:
    """A link as stored. ``entry`` is None when the entry it names is missing; ``sealed_at`` is
    the database's clock when it was sealed."""

    seq: int
    entry_id: UUID
    prev_hash: bytes
    hash: bytes
    entry: AuditEntry | None = None
    sealed_at: datetime | None = None

    def fits(self, prev_hash: bytes) -> bool:
        """True when the entry, at this seq, hashes to this link's hash after ``prev_hash``."""
        return self.entry is not None and chain_hash(prev_hash, attrs.evolve(self.entry, seq=self.seq)) == self.hash


@attrs.frozen
class ExpectedHead:
    """A head kept elsewhere: its hash and, when known, its seq."""

    hash: bytes
    seq: int | None = None

    @classmethod
    def parse(cls, text: str) -> ExpectedHead:
        """``HASH`` or ``SEQ:HASH``, the hash as 64 hex digits."""
        seq_text, _, hex_text = text.strip().rpartition(":")
        try:
            digest = bytes.fromhex(hex_text)
            seq = int(seq_text) if seq_text else None
        except ValueError:
            digest, seq = b"", None
        if len(digest) != HASH_BYTES or (seq_text and (seq is None or seq < 1)):
            raise InvalidInput("an expected head is 64 hex digits, optionally after its seq (SEQ:HASH)")
        return cls(digest, seq)


@attrs.frozen
class ChainBreak:
    """The first place the chain was tampered with."""

    reason: BreakReason
    seq: int
    entry_id: UUID | None
    detail: str

    def __str__(self) -> str:
        entry = f" (entry {self.entry_id})" if self.entry_id else ""
        return f"{self.reason}: seq {self.seq}{entry}: {self.detail}"


def seal(head: ChainHead, entries: Sequence[AuditEntry]) -> list[ChainLink]:
    """Links appending ``entries``, in the given order, after ``head``."""
    links, prev, seq = [], head.hash, head.seq
    for entry in entries:
        seq += 1
        sealed = attrs.evolve(entry, seq=seq)
        link = ChainLink(seq, entry.id, prev, chain_hash(prev, sealed), sealed)
        links.append(link)
        prev = link.hash
    return links


Problem = Literal["seq", "missing", "prev", "content"]


@attrs.frozen
class Suspect:
    """The first link that does not fit, what was expected of it, and the check it failed."""

    link: ChainLink
    expected_seq: int
    expected_prev: bytes
    problem: Problem


@attrs.frozen
class BreakContext:
    """What :func:`classify` needs to know about the rest of the chain.

    ``prev_seq``: the seq of the link whose hash the suspect follows (``first_seq - 1`` for the
    anchor), None when no link has it. ``link_after_prev``: the link at ``prev_seq + 1``.
    ``next_link``: the link after the suspect. ``expected_seq_later``: a link with the expected
    seq comes after the suspect.
    """

    prev_seq: int | None = None
    link_after_prev: ChainLink | None = None
    next_link: ChainLink | None = None
    expected_seq_later: bool = False
