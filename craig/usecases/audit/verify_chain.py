"""Verify the audit chain from its first kept link to its head, page by page.

The walk needs constant memory whatever the chain's length; at the first link that does not
fit, a few look-ups (the link it follows, the next link) let the domain name what was done.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from craig.domain.audit_chain import BreakContext, ChainBreak, ChainHead, ChainLink, ChainStart, ExpectedHead, Suspect
from craig.domain.audit_verify import ChainWalk, classify
from craig.domain.constants import AUDIT_UNSEALED_ALERT, AUDIT_VERIFY_PAGE_SIZE
from craig.ports.audit import AuditChainStore, PendingEntries, RetentionFloor
from craig.ports.clock import Clock

#: ``progress(links checked, links in all)``
Progress = Callable[[int, int], None]


@attrs.frozen
class ChainReport:
    start: ChainStart
    checked: int
    #: The last link checked (the head, when the chain is intact).
    head: ChainHead | None
    broken: ChainBreak | None
    pending: PendingEntries
    #: Pending entries older than ``AUDIT_UNSEALED_ALERT``: the sealer is not running, or links were cut.
    stale: bool
    floor: RetentionFloor

    @property
    def intact(self) -> bool:
        return self.broken is None and not self.stale


class VerifyAuditChain:
    def __init__(self, store: AuditChainStore, clock: Clock, page_size: int = AUDIT_VERIFY_PAGE_SIZE) -> None:
        self.store = store
        self.clock = clock
        self.page_size = page_size

    async def __call__(self, expect_head: ExpectedHead | None = None, progress: Progress | None = None) -> ChainReport:
        report = progress or (lambda done, total: None)
        start = await self.store.start()
        total = await self.store.count_links()
        walk = ChainWalk(start, expect_head)
        broken, last, after = None, None, start.first_seq - 1
        report(0, total)
        while broken is None:
            page = await self.store.links(after, self.page_size)
            for index, link in enumerate(page):
                suspect = walk.step(link)
                if suspect is not None:
                    following = page[index + 1] if index + 1 < len(page) else None
                    broken = classify(suspect, await self._context(start, suspect, following))
                    break
                last = link
            report(walk.checked, max(total, walk.checked))
            if broken is None and len(page) < self.page_size:
                broken = walk.finish()
                break
            after = page[-1].seq
        pending = await self.store.pending()
        stale = pending.oldest_at is not None and self.clock.now() - pending.oldest_at > AUDIT_UNSEALED_ALERT
        return ChainReport(
            start=start,
            checked=walk.checked,
            head=ChainHead(last.seq, last.hash) if last else None,
            broken=broken,
            pending=pending,
            stale=stale,
            floor=await self.store.retention_floor(),
        )

    async def _context(self, start: ChainStart, suspect: Suspect, following: ChainLink | None) -> BreakContext:
        link = suspect.link
        if link.prev_hash == start.anchor:
            prev_seq: int | None = start.first_seq - 1
        else:
            prev_seq = await self.store.seq_of_hash(link.prev_hash)
        if following is None:
            after = await self.store.links(link.seq, 1)
            following = after[0] if after else None
        return BreakContext(
            prev_seq=prev_seq,
            link_after_prev=None if prev_seq is None else await self.store.link_at(prev_seq + 1),
            next_link=following,
            expected_seq_later=False,  # the store lists links in seq order: a missing seq never comes later
        )
