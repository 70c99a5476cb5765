"""Verifying an audit chain: the walk, the naming of what was done, and the whole check.

Each link is checked in this order: its seq follows the previous one; its entry exists; its
``prev_hash`` is the previous link's hash (or the start's anchor); its hash is
``SHA-256(prev_hash || canonical(entry))``. The first link that fails is named:

* **removed**: a seq is missing, the entry a link names is gone, or the link follows a hash
  no link of the chain has (a link before it was removed and the seqs closed up);
* **changed**: the entry, or the link's stored hashes, differ from what was sealed;
* **inserted**: the chain skips over the link (the next link follows the one before it), or
  links sit between a link and the one whose hash it follows;
* **out_of_order**: the link follows a link that comes after it, or its seq comes too early;
* **rewritten**: the chain is consistent but does not pass through the expected head.
"""

from __future__ import annotations

from collections.abc import Sequence

from craig.domain.audit_chain import (
    BreakContext,
    BreakReason,
    ChainBreak,
    ChainLink,
    ChainStart,
    ExpectedHead,
    Problem,
    Suspect,
)


class ChainWalk:
    """Checks links one by one in seq order, in constant memory. :meth:`step` returns a
    :class:`Suspect` for the first link that does not fit (name it with :func:`classify`), else
    None; :meth:`finish`, after the last link, says whether the expected head was met."""

    def __init__(self, start: ChainStart, expect_head: ExpectedHead | None = None) -> None:
        self.start = start
        self.expect_head = expect_head
        self.expected_seq = start.first_seq
        self.expected_prev = start.anchor
        self.checked = 0
        self.head_found = False
        self.head_missed: ChainBreak | None = None

    def step(self, link: ChainLink) -> Suspect | None:
        problem = self._problem(link)
        if problem is not None:
            return Suspect(link, self.expected_seq, self.expected_prev, problem)
        expected = self.expect_head
        if expected is not None and (link.hash == expected.hash or link.seq == expected.seq):
            if link.hash == expected.hash and expected.seq in (None, link.seq):
                self.head_found = True
            elif self.head_missed is None:
                # Reported at the end, unless a link after it shows what was done.
                self.head_missed = ChainBreak(
                    BreakReason.REWRITTEN,
                    link.seq,
                    link.entry_id,
                    f"the chain no longer passes through the expected head at seq {expected.seq or link.seq}: "
                    "it was rewritten at or before this seq",
                )
        self.checked += 1
        self.expected_seq = link.seq + 1
        self.expected_prev = link.hash
        return None

    def _problem(self, link: ChainLink) -> Problem | None:
        if link.seq != self.expected_seq:
            return "seq"
        if link.entry is None:
            return "missing"
        if link.prev_hash != self.expected_prev:
            return "prev"
        if not link.fits(link.prev_hash):
            return "content"
        return None

    def finish(self) -> ChainBreak | None:
        """The checks that need the whole chain: an expected head that never came."""
        expected = self.expect_head
        if expected is None or self.head_found:
            return None
        if self.head_missed is not None:
            return self.head_missed
        last = self.expected_seq - 1
        if expected.seq is None:
            return ChainBreak(
                BreakReason.REWRITTEN,
                last,
                None,
                "the chain does not pass through the expected head: rewritten, or the entries up to it removed",
            )
        if expected.seq > last:
            return ChainBreak(
                BreakReason.REMOVED,
                last + 1,
                None,
                f"the chain ends at seq {last}, before the expected head at seq {expected.seq}",
            )
        return ChainBreak(
            BreakReason.REMOVED,
            expected.seq,
            None,
            f"the expected head at seq {expected.seq} was purged (the chain starts at seq "
            f"{self.start.first_seq}); it cannot be checked: keep a newer head",
        )


def classify(suspect: Suspect, context: BreakContext) -> ChainBreak:
    """Name what was done to the suspect link (see the module's docstring)."""
    link, expected_seq = suspect.link, suspect.expected_seq
    if suspect.problem == "seq":
        if link.seq < expected_seq or context.expected_seq_later:
            return ChainBreak(
                BreakReason.OUT_OF_ORDER, link.seq, link.entry_id, f"it stands where seq {expected_seq} belongs"
            )
        return ChainBreak(
            BreakReason.REMOVED,
            expected_seq,
            None,
            f"the chain goes from seq {expected_seq - 1} to seq {link.seq}: seq {expected_seq} is missing",
        )
    if suspect.problem == "missing":
        return ChainBreak(BreakReason.REMOVED, link.seq, link.entry_id, "the chain names this entry, and it is gone")
    if suspect.problem == "content":
        return ChainBreak(BreakReason.CHANGED, link.seq, link.entry_id, "the entry is not what was sealed")
    return _classify_prev(suspect, context)


def _classify_prev(suspect: Suspect, context: BreakContext) -> ChainBreak:
    link = suspect.link
    if link.fits(suspect.expected_prev):
        return ChainBreak(BreakReason.CHANGED, link.seq, link.entry_id, "its stored previous hash was changed")
    prev_seq = context.prev_seq
    if prev_seq is not None and prev_seq > link.seq:
        return ChainBreak(
            BreakReason.OUT_OF_ORDER, link.seq, link.entry_id, f"it was sealed after seq {prev_seq}, which comes later"
        )
    if context.next_link is not None and context.next_link.prev_hash == suspect.expected_prev:
        return ChainBreak(
            BreakReason.INSERTED,
            link.seq,
            link.entry_id,
            f"the next link follows seq {suspect.expected_seq - 1}: the chain skips this one",
        )
    if prev_seq is not None and prev_seq < link.seq - 1:
        first = context.link_after_prev
        return ChainBreak(
            BreakReason.INSERTED,
            prev_seq + 1,
            first.entry_id if first else None,
            f"seq {link.seq} follows seq {prev_seq}: the links between are not part of the chain",
        )
    return ChainBreak(
        BreakReason.REMOVED,
        link.seq,
        link.entry_id,
        "it follows a link that is not in the chain: the entry before it was removed (or rewritten)",
    )


def verify_chain(
    links: Sequence[ChainLink], start: ChainStart | None = None, expect_head: ExpectedHead | None = None
) -> ChainBreak | None:
    """The first break of ``links`` (the kept chain in seq order), or None when it is intact."""
    start = start or ChainStart()
    walk = ChainWalk(start, expect_head)
    by_hash = {link.hash: link.seq for link in links}
    by_seq = {link.seq: link for link in links}
    for index, link in enumerate(links):
        found = walk.step(link)
        if found is not None:
            prev_seq = start.first_seq - 1 if link.prev_hash == start.anchor else by_hash.get(link.prev_hash)
            later = links[index + 1 :]
            context = BreakContext(
                prev_seq=prev_seq,
                link_after_prev=None if prev_seq is None else by_seq.get(prev_seq + 1),
                next_link=later[0] if later else None,
                expected_seq_later=any(other.seq == found.expected_seq for other in later),
            )
            return classify(found, context)
    return walk.finish()
