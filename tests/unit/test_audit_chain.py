"""The audit hash chain: any single edit, deletion, insertion or swap anywhere in a chain is
detected, and named for what it is, at the link it was done to."""

from __future__ import annotations

import hashlib
import unicodedata
import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from craig.domain.audit import GENESIS_HASH, AuditAction, AuditEntry, AuditOutcome, canonical, chain_hash, clean_text
from craig.domain.audit_chain import (
    GENESIS,
    BreakReason,
    ChainHead,
    ChainLink,
    ChainStart,
    ExpectedHead,
    seal,
)
from craig.domain.audit_verify import verify_chain
from craig.domain.constants import AUDIT_TEXT_MAX_LENGTH
from craig.domain.errors import InvalidInput

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEXT = st.text(max_size=12)


@st.composite
def entries(draw: st.DrawFn) -> AuditEntry:
    return AuditEntry(
        id=uuid.UUID(int=draw(st.integers(0, 2**128 - 1))),
        action=draw(st.sampled_from(AuditAction)),
        resource_type=draw(st.sampled_from(["case", "contact", "placement", "rule_set"])),
        outcome=draw(st.sampled_from(AuditOutcome)),
        actor=draw(st.none() | st.uuids()),
        actor_name=draw(st.none() | TEXT),
        resource_id=draw(st.none() | TEXT),
        resource_ids=draw(st.lists(TEXT, max_size=3)),
        case_id=draw(st.none() | st.uuids()),
        changed_fields=draw(st.lists(st.sampled_from(["title", "status", "family_name"]), max_size=3)),
        at=T0 + timedelta(microseconds=draw(st.integers(0, 10**12))),
    )


chains = st.lists(entries(), min_size=2, max_size=8, unique_by=lambda e: e.id).map(lambda es: seal(GENESIS, es))


def head_of(links: list[ChainLink]) -> ExpectedHead:
    return ExpectedHead(links[-1].hash, links[-1].seq)


def renumbered(links: list[ChainLink]) -> list[ChainLink]:
    """The links as the database would list them after a tamperer closed up the seqs."""
    return [attrs.evolve(link, seq=n) for n, link in enumerate(links, start=1)]


def test_a_sealed_chain_verifies_and_its_hashes_are_the_documented_ones() -> None:
    es = [AuditEntry(id=uuid.uuid4(), action="read", resource_type="case", at=T0) for _ in range(3)]
    links = seal(GENESIS, es)
    assert verify_chain(links, expect_head=head_of(links)) is None
    assert verify_chain(links, expect_head=ExpectedHead(links[1].hash)) is None
    assert links[0].prev_hash == GENESIS_HASH and [link.seq for link in links] == [1, 2, 3]
    first = attrs.evolve(es[0], seq=1)
    assert links[0].hash == hashlib.sha256(GENESIS_HASH + canonical(first)).digest() == chain_hash(GENESIS_HASH, first)
    assert canonical(first).startswith(b'{"action":"read","actor":null,')


@given(chains, st.data())
def test_any_edit_of_an_entry_or_its_hashes_is_named_changed(links: list[ChainLink], data: st.DataObject) -> None:
    k = data.draw(st.integers(0, len(links) - 1))
    link = links[k]
    assert link.entry is not None
    what = data.draw(st.sampled_from(["entry", "hash", "prev_hash"]))
    if what == "entry":
        name, value = data.draw(
            st.sampled_from(
                [
                    ("actor_name", "Mallory"),
                    ("outcome", AuditOutcome.DENIED if link.entry.outcome is AuditOutcome.ALLOWED else "allowed"),
                    ("at", link.entry.at + timedelta(microseconds=1) if link.entry.at else T0),
                    ("resource_ids", (*link.entry.resource_ids, "extra")),
                    ("changed_fields", () if link.entry.changed_fields else ("title",)),
                    ("id", uuid.uuid4()),
                ]
            )
        )
        tampered = attrs.evolve(link, entry=attrs.evolve(link.entry, **{name: value}))
    else:
        tampered = attrs.evolve(link, **{what: bytes(32 - len(b"x")) + b"x"})
    broken = verify_chain([*links[:k], tampered, *links[k + 1 :]], expect_head=head_of(links))
    assert broken is not None
    assert (broken.reason, broken.seq, broken.entry_id) == (BreakReason.CHANGED, link.seq, link.entry_id)


@given(chains, st.data())
def test_any_deletion_is_named_removed(links: list[ChainLink], data: st.DataObject) -> None:
    k = data.draw(st.integers(0, len(links) - 1))
    kind = data.draw(st.sampled_from(["link", "link, seqs closed up", "entry only"]))
    if kind == "entry only":
        tampered = [*links[:k], attrs.evolve(links[k], entry=None), *links[k + 1 :]]
    else:
        tampered = links[:k] + links[k + 1 :]
        if kind == "link, seqs closed up":
            tampered = renumbered(tampered)
    broken = verify_chain(tampered, expect_head=head_of(links))
    assert broken is not None and broken.reason is BreakReason.REMOVED and broken.seq == k + 1
    if kind == "entry only":
        assert broken.entry_id == links[k].entry_id


@given(chains, entries(), st.data())
def test_any_insertion_before_the_head_is_named_inserted(
    links: list[ChainLink], forged_entry: AuditEntry, data: st.DataObject
) -> None:
    assume(forged_entry.id not in {link.entry_id for link in links})  # ids are unique in the store
    k = data.draw(st.integers(0, len(links) - 1))  # the forged link goes before links[k]
    prev = links[k - 1].hash if k else GENESIS_HASH
    if data.draw(st.booleans()):  # as a careful forger would: it follows its predecessor
        (forged,) = seal(ChainHead(k, prev), [forged_entry])
    else:
        forged = ChainLink(k + 1, forged_entry.id, b"\1" * 32, b"\2" * 32, forged_entry)
    tampered = renumbered([*links[:k], forged, *links[k:]])
    broken = verify_chain(tampered, expect_head=head_of(links))
    assert broken is not None
    assert (broken.reason, broken.seq, broken.entry_id) == (BreakReason.INSERTED, k + 1, forged_entry.id)


@given(chains, st.data())
def test_any_swap_of_two_links_is_named_out_of_order(links: list[ChainLink], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(links) - 2))
    j = data.draw(st.integers(i + 1, len(links) - 1))
    swapped = list(links)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    closed_up = data.draw(st.booleans())
    tampered = renumbered(swapped) if closed_up else swapped
    broken = verify_chain(tampered, expect_head=head_of(links))
    assert broken is not None and broken.reason is BreakReason.OUT_OF_ORDER
    assert broken.entry_id == links[j].entry_id
    assert broken.seq == (i + 1 if closed_up else links[j].seq)


@given(chains, st.data())
def test_a_rewritten_chain_verifies_alone_but_misses_the_expected_head(
    links: list[ChainLink], data: st.DataObject
) -> None:
    k = data.draw(st.integers(0, len(links) - 1))
    entries_ = [link.entry for link in links]
    assert all(e is not None for e in entries_)
    rewritten_entry = attrs.evolve(entries_[k], actor_name="Mallory")  # type: ignore[arg-type]
    rewritten = seal(GENESIS, [*entries_[:k], rewritten_entry, *entries_[k + 1 :]])  # type: ignore[list-item]
    assert verify_chain(rewritten) is None
    with_seq = verify_chain(rewritten, expect_head=head_of(links))
    assert with_seq is not None and with_seq.reason is BreakReason.REWRITTEN and with_seq.seq == len(links)
    without_seq = verify_chain(rewritten, expect_head=ExpectedHead(links[-1].hash))
    assert without_seq is not None and without_seq.reason is BreakReason.REWRITTEN


@given(chains, st.data())
def test_a_purged_prefix_verifies_from_its_anchor(links: list[ChainLink], data: st.DataObject) -> None:
    k = data.draw(st.integers(1, len(links) - 1))  # links[:k] purged
    start = ChainStart(first_seq=k + 1, anchor=links[k - 1].hash)
    assert verify_chain(links[k:], start, expect_head=head_of(links)) is None
    cut_further = verify_chain(links[k + 1 :], start)
    if k + 1 < len(links):
        assert cut_further is not None and cut_further.reason is BreakReason.REMOVED and cut_further.seq == k + 1
    old_head = verify_chain(links[k:], start, expect_head=ExpectedHead(links[0].hash, 1))
    assert old_head is not None and "purged" in old_head.detail


def test_expected_heads_parse_and_refuse_garbage() -> None:
    digest = bytes(range(32))
    assert ExpectedHead.parse(digest.hex()) == ExpectedHead(digest)
    assert ExpectedHead.parse(f" 12:{digest.hex().upper()} ") == ExpectedHead(digest, 12)
    for bad in ["", "zz", digest.hex()[:-2], f"x:{digest.hex()}", f"0:{digest.hex()}", f"-1:{digest.hex()}"]:
        with pytest.raises(InvalidInput):
            ExpectedHead.parse(bad)


def test_entries_keep_no_control_characters_and_refuse_what_code_got_wrong() -> None:
    entry = AuditEntry(
        id=uuid.uuid4(),
        action="update",
        resource_type="case",
        actor_name="Ann\x00\x1b[31m" + "x" * 500,
        changed_fields=["title", "status", "title"],
        client_ip="2001:DB8::1",
    )
    assert entry.actor_name is not None and "\x00" not in entry.actor_name and len(entry.actor_name) == 200
    assert entry.changed_fields == ("status", "title") and entry.client_ip == "2001:db8::1"
    for bad in [
        {"resource_type": "Case; DROP"},
        {"changed_fields": ["family name"]},
        {"changed_fields": "title"},
        {"client_ip": "not an ip"},
        {"action": "delete"},
        {"at": datetime(2026, 1, 1)},
        {"resource_ids": ["x"] * 1001},
    ]:
        with pytest.raises(ValueError):
            AuditEntry(**{"id": uuid.uuid4(), "action": "read", "resource_type": "case", **bad})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        canonical(entry)  # neither written nor sealed


@given(
    st.text()
    | st.from_regex(r"[\x00-\x1f\ud800-\udfff a-z]*", fullmatch=True)
    | st.text(alphabet="xy \t\u2028", min_size=AUDIT_TEXT_MAX_LENGTH + 2, max_size=AUDIT_TEXT_MAX_LENGTH + 40)
)
@example("x" * (AUDIT_TEXT_MAX_LENGTH - 1) + " tail")  # a denied rule-set name: stored ending in a space
def test_clean_text_removes_control_characters_and_surrogates_and_nothing_else(value: str) -> None:
    slow = "".join(ch for ch in value if unicodedata.category(ch) not in ("Cc", "Cs")).strip()
    cleaned = clean_text(value)
    assert cleaned == (slow[:AUDIT_TEXT_MAX_LENGTH].rstrip() or None)
    # Cleaning what is stored changes nothing: the chain hashes an entry read back from its row
    # (cleaned again), and an auditor's own program hashes the row as stored. Cut at a space,
    # the stored text ended in one that a second cleaning stripped.
    assert clean_text(cleaned) == cleaned
