"""The event catalogue (craig/domain/event_catalogue.py) is the truth about every event Craig
stages: every use case that stages an event is driven here on the memory adapters, and each
staged event must be in the catalogue with its source, its aggregate type and exactly the
catalogued payload keys; every catalogued event must be staged by one of them; and README's
catalogue table must list the same events."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from craig.adapters.captcha.disabled import DisabledCaptcha
from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.memory.outbox import TABLE as OUTBOX
from craig.domain import event_catalogue
from craig.domain.access import Principal, Role
from craig.domain.attachments import UploadValidation, new_attachment
from craig.domain.case_lifecycle import CaseDetails
from craig.domain.event_catalogue import BY_NAME, CATALOGUE, EventType
from craig.domain.events import EventEnvelope
from craig.domain.exchange import DispatchResult, PartnerAnswer
from craig.domain.foster_home_changes import FosterHomeChange
from craig.domain.partners import Partner
from craig.domain.placement_changes import NewPlacement, PlacementPatch
from craig.domain.placements import EndReason, PlacementStatus
from craig.domain.screening import ResponseTimes
from craig.domain.versions import IfMatch
from craig.ports.errors import ObjectStoreUnavailable
from craig.ports.exchange import Delivery, Pace, PartnerGateway
from craig.usecases.attachments import REGISTERED_TABLES, AttachmentScanner, UploadAttachment
from craig.usecases.case_lifecycle.close_case import CloseCase
from craig.usecases.case_lifecycle.reopen_case import ReopenCase
from craig.usecases.case_lifecycle.unassign_worker import UnassignWorker
from craig.usecases.case_lifecycle.update_case import UpdateCase
from craig.usecases.cases import AssignWorker, OpenCase, RecordContact
from craig.usecases.exchange import DispatchSendJob, RecoverExpiredSendJobs, SendPolicy
from craig.usecases.foster_homes.update_foster_home import UpdateFosterHome
from craig.usecases.intake import IntakePolicy, ReferralForm, SubmitReferral
from craig.usecases.placements import CreateFosterHome, CreatePlacement, UpdatePlacement
from craig.usecases.referrals.screen_referral import ScreenIn, ScreenOut, ScreenReferral
from craig.usecases.rules import CreateRuleSet, RuleSetCache
from tests.support.backends import Backend, memory_backend
from tests.support.exchange_data import add_partner, add_transaction
from tests.support.files import png_bytes

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"
POLICY = SendPolicy(max_attempts=1)


class Answering(PartnerGateway):
    """A partner that answers every send with ``answer``."""

    def __init__(self, answer: DispatchResult) -> None:
        self.answer = answer

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        await pace()
        return self.answer

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


async def _unpaced() -> None:
    return None


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    async with memory_backend() as harness:
        yield harness


async def drive_casework(backend: Backend) -> None:
    """Cases, contacts, attachments: every event of the ``craig-cases`` source."""
    assert backend.clock is not None
    clock, uow = backend.clock, backend.uow
    ann, sup = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER), Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
    case = await OpenCase(uow(), clock)(ann, title="Doe family", family_name="Doe", opened_at=None)
    await AssignWorker(uow(), clock)(sup, case.id, uuid.uuid4())
    contact = await RecordContact(uow(), clock)(
        ann, case.id, contact_type="home_visit", occurred_at=clock.now() - timedelta(hours=1), summary="All well."
    )
    store = MemoryObjectStore(clock=clock)
    upload = UploadAttachment(uow(), uow, store, clock, UploadValidation())
    png = {"file_name": "p.png", "content_type": "image/png", "body": png_bytes(), "attachment_type": "photo"}
    await upload(ann, case.id, contact.id, **png)
    store.available = False  # the put fails: the compensation stages upload_failed
    with pytest.raises(ObjectStoreUnavailable):
        await UploadAttachment(uow(), uow, store, clock, UploadValidation())(ann, case.id, contact.id, **png)
    store.available = True
    # A pending row whose blob never came (a crash between the phases): the scanner fails it.
    draft = new_attachment(
        id=uuid.uuid4(),
        case_id=case.id,
        contact_id=contact.id,
        attachment_type=None,
        file_name="lost.txt",
        content_type="text/plain",
        file_size=5,
        uploaded_by=ann.sub,
        worker_name=ann.name,
        now=clock.now(),
    )
    unit = uow()
    async with unit:
        await unit.attachments.add(draft)
        await unit.commit()
    clock.advance(7200)
    report = await AttachmentScanner(store, uow, clock, timedelta(hours=1), REGISTERED_TABLES).run_once()
    assert report.missing == 1


async def drive_placements(backend: Backend) -> None:
    """Homes and placements: every event of the ``craig-placements`` source."""
    assert backend.clock is not None
    clock, uow = backend.clock, backend.uow
    sup = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
    case = await OpenCase(uow(), clock)(sup, title="Roe family", family_name=None, opened_at=None)
    first = await CreateFosterHome(uow(), clock)(sup, name="First home", capacity=2)
    second = await CreateFosterHome(uow(), clock)(sup, name="Second home", capacity=2)
    start = date(2026, 3, 1)
    placing = NewPlacement(case_id=case.id, foster_home_id=first.id, status=PlacementStatus.ACTIVE, start_date=start)
    active = await CreatePlacement(uow(), clock)(sup, placing)
    await UpdatePlacement(uow(), clock)(sup, active.id, PlacementPatch(foster_home_id=second.id))
    ended = PlacementPatch(status=PlacementStatus.ENDED, end_reason=EndReason.REUNIFIED)
    await UpdatePlacement(uow(), clock)(sup, active.id, ended)
    planning = NewPlacement(case_id=case.id, foster_home_id=None, status=PlacementStatus.PLANNED, start_date=start)
    planned = await CreatePlacement(uow(), clock)(sup, planning)
    await UpdatePlacement(uow(), clock)(sup, planned.id, PlacementPatch(status=PlacementStatus.CANCELLED))


async def drive_exchange(backend: Backend) -> None:
    """Send jobs: ``exchange.sent`` and ``exchange.send_failed`` from a dispatch recorded by the
    worker's pass, and ``exchange.send_failed`` from the recovery of an expired lease."""
    assert backend.clock is not None
    partner = await add_partner(backend)
    queue = backend.send_job_queue
    for answer in (PartnerAnswer(200), PartnerAnswer(422)):
        await add_transaction(backend, [partner.id])
        [claim] = (await queue.run_pass([], 1, POLICY.lease, POLICY.max_rate_wait)).claims
        dispatched = await DispatchSendJob(Answering(answer), backend.clock, POLICY)(claim, _unpaced)
        assert dispatched.outcome is not None and dispatched.outcome.event is not None
        await queue.run_pass([dispatched.outcome], 0, POLICY.lease, POLICY.max_rate_wait)
    await add_transaction(backend, [partner.id])
    await queue.run_pass([], 1, POLICY.lease, POLICY.max_rate_wait)  # claimed, then its worker vanishes
    backend.clock.advance(POLICY.lease.total_seconds() + 1)
    [recovered] = await RecoverExpiredSendJobs(backend.uow, backend.clock, POLICY)()
    assert str(recovered.status) == "failed"


async def drive_intake_and_rules(backend: Backend) -> None:
    """A rule set's new version, then a referral triaged by it."""
    assert backend.clock is not None
    clock, uow = backend.clock, backend.uow
    sup = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
    cache = RuleSetCache()
    rules = [{"when": {"fact": "child_age", "op": "lt", "value": 5}, "then": "high"}]
    await CreateRuleSet(uow(), cache, "instance-a", clock)(sup, "intake-triage", rules)
    policy = IntakePolicy(require_captcha=False, rate_limit=10, rate_window=timedelta(minutes=1))
    form = ReferralForm(reporter_name="Rita Reporter", child_first_name="Kim", child_age=3, concern="Left alone.")
    await SubmitReferral(uow(), DisabledCaptcha(), cache, clock, policy)(form, "192.0.2.1")


async def drive_case_lifecycle(backend: Backend) -> None:
    """Screening a referral in and out, a case's changes, closure and reopening, unassigning a
    worker, and a foster home's change."""
    assert backend.clock is not None
    clock, uow = backend.clock, backend.uow
    sup = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
    cache = RuleSetCache()
    policy = IntakePolicy(require_captcha=False, rate_limit=10, rate_window=timedelta(minutes=1))
    submit = SubmitReferral(uow(), DisabledCaptcha(), cache, clock, policy)
    form = ReferralForm(reporter_name="Rita Reporter", child_first_name="Kim", child_age=3, concern="Left alone.")
    referrals = [await submit(form, "192.0.2.1") for _ in range(2)]
    worker = uuid.uuid4()
    opened = await ScreenReferral(uow(), clock, ResponseTimes())(
        sup, referrals[0].id, ScreenIn(title="Kim's family", assign_to=worker), IfMatch()
    )
    await ScreenReferral(uow(), clock, ResponseTimes())(
        sup, referrals[1].id, ScreenOut(reason="Another agency already follows the family."), IfMatch()
    )
    assert opened.case is not None
    case_id = opened.case.id
    await UpdateCase(uow(), clock)(sup, case_id, CaseDetails(title="Kim's family (K.)"), IfMatch())
    await UnassignWorker(uow(), clock)(sup, case_id, worker)
    await CloseCase(uow(), clock)(sup, case_id, "Family moved away.", IfMatch())
    await ReopenCase(uow(), clock)(sup, case_id, "Family came back.", None)
    home = await CreateFosterHome(uow(), clock)(sup, name="Third home", capacity=2)
    await UpdateFosterHome(uow(), clock)(sup, home.id, FosterHomeChange(capacity=3), IfMatch())


async def staged(backend: Backend) -> list[EventEnvelope]:
    assert backend.memory is not None
    async with backend.memory.transaction() as tx:
        return [row.envelope for row in sorted(tx.rows(OUTBOX), key=lambda row: row.seq)]


async def test_every_staged_event_is_catalogued_with_exactly_its_payload_keys(backend: Backend) -> None:
    for drive in (drive_casework, drive_placements, drive_exchange, drive_intake_and_rules, drive_case_lifecycle):
        await drive(backend)
    events = await staged(backend)
    for envelope in events:
        entry = BY_NAME.get(envelope.type)
        assert entry is not None, f"{envelope.type} is staged but not in the catalogue"
        assert (envelope.source, envelope.aggregate_type) == (entry.source, entry.aggregate_type), envelope.type
        assert set(envelope.payload) == entry.payload_keys, envelope.type
    # Every catalogued event was staged above: the catalogue lists nothing stale, and the drive
    # reaches every staging site.
    assert {envelope.type for envelope in events} == set(BY_NAME)


def test_the_catalogue_lists_every_event_type_it_defines_once() -> None:
    defined = [value for value in vars(event_catalogue).values() if isinstance(value, EventType)]
    assert set(defined) == set(CATALOGUE)
    assert len({event.name for event in CATALOGUE}) == len(CATALOGUE)
    for event in CATALOGUE:
        assert event.payload and all(meaning.strip() for meaning in event.payload.values()), event.name
        assert event.name.split(".")[0] == event.source.removeprefix("craig-"), event.name


def readme_catalogue() -> list[tuple[str, str, str, list[str]]]:
    """The rows of README's event catalogue table: type, source, aggregate type, payload keys."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Event catalogue", 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        name, source, aggregate, _when, payload = cells
        rows.append((name.strip("`"), source.strip("`"), aggregate.strip("`"), re.findall(r"`([a-z_]+)`", payload)))
    return rows


def test_the_readme_table_lists_the_catalogue() -> None:
    expected = [(e.name, e.source, e.aggregate_type, list(e.payload)) for e in CATALOGUE]
    assert readme_catalogue() == expected
