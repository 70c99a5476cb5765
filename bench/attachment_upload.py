"""What the two-phase upload costs: Craig's upload use case against the legacy single-transaction
flow (row written ``present`` and blob put inside one transaction), side by side, on PostgreSQL
and a SeaweedFS S3 gateway, sequentially and with 8 concurrent uploads.

    .venv/bin/python -m bench.attachment_upload [--files 120] [--kib 256]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench._services import BENCH_CIPHER, exit_cleanly_on_sigterm, postgres_database
from craig.adapters.clock import SystemClock
from craig.adapters.objectstore.minio import MinioObjectStore
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.attachments import ObjectStatus, UploadValidation, new_attachment
from craig.domain.contacts import Contact
from craig.usecases.attachments import UploadAttachment, upload_failed_event
from craig.usecases.cases import OpenCase, RecordContact, visible_contact
from craig.usecases.events import stage_event
from craig.usecases.ids import new_id
from tests.support.services import SeaweedS3

Upload = Callable[[bytes], Awaitable[None]]


def legacy(db: PostgresDatabase, store: MinioObjectStore, ann: Principal, contact: Contact) -> Upload:
    """The legacy flow: one transaction around the put; a crash after the put leaves an orphan,
    a failed commit after it leaves a blob without a row."""

    async def upload(body: bytes) -> None:
        uow = PostgresUnitOfWork(db, BENCH_CIPHER)
        draft = new_attachment(
            id=new_id(), case_id=contact.case_id, contact_id=contact.id, attachment_type=None, file_name="a.png",
            content_type="image/png", file_size=len(body), uploaded_by=ann.sub, worker_name=ann.name,
            now=SystemClock().now(),
        )  # fmt: skip
        async with uow:  # the same reads and writes as the use case, in ONE transaction
            await visible_contact(uow, ann, contact.case_id, contact.id)
            row = await uow.attachments.add(draft)
            await stage_event(
                uow, upload_failed_event(row.id, row.contact_id, "stands in for 'uploaded'", draft.created_at)
            )
            await store.put(row.object_key, body, "image/png")
            await uow.attachments.mark_present(row.id)
            await uow.commit()

    return upload


def two_phase(db: PostgresDatabase, store: MinioObjectStore, ann: Principal, contact: Contact) -> Upload:
    async def upload(body: bytes) -> None:
        use_case = UploadAttachment(
            PostgresUnitOfWork(db, BENCH_CIPHER),
            lambda: PostgresUnitOfWork(db, BENCH_CIPHER),
            store,
            SystemClock(),
            UploadValidation(),
        )
        attachment = await use_case(
            ann,
            contact.case_id,
            contact.id,
            file_name="a.png",
            content_type="image/png",
            body=body,
            attachment_type=None,
        )
        assert attachment.object_status is ObjectStatus.PRESENT

    return upload


async def timed(upload: Upload, body: bytes, files: int, concurrency: int) -> float:
    queue = list(range(files))
    start = time.perf_counter()

    async def worker() -> None:
        while queue:
            queue.pop()
            await upload(body)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return files / (time.perf_counter() - start)


async def run(url: str, s3: SeaweedS3, files: int, kib: int) -> None:
    db = PostgresDatabase(url, pool_size=20)
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    store = MinioObjectStore(s3.endpoint, s3.access_key, s3.secret_key, bucket, secure=False)
    await store.prepare()
    clock = SystemClock()
    ann = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)
    case = await OpenCase(PostgresUnitOfWork(db, BENCH_CIPHER), clock)(
        ann, title="bench", family_name=None, opened_at=None
    )
    contact = await RecordContact(PostgresUnitOfWork(db, BENCH_CIPHER), clock)(
        ann, case.id, contact_type="other", occurred_at=clock.now(), summary="bench"
    )
    body = b"\x89PNG\r\n\x1a\n" + os.urandom(kib * 1024 - 8)
    flows = {
        "legacy (one transaction)": legacy(db, store, ann, contact),
        "two-phase": two_phase(db, store, ann, contact),
    }
    for flow in flows.values():  # warm-up: pools, connections, JIT of the S3 gateway
        await timed(flow, body, 10, 4)
    print(f"{files} uploads of {kib} KiB each, PostgreSQL + SeaweedFS S3 on 127.0.0.1")
    for concurrency in (1, 8):
        rates = {}
        for _ in range(2):  # interleaved rounds, best of two, to damp the noise of a shared machine
            for name, flow in flows.items():
                rates[name] = max(rates.get(name, 0.0), await timed(flow, body, files, concurrency))
        for name, rate in rates.items():
            print(f"  concurrency {concurrency}: {name:<26} {rate:8.1f} uploads/s")
        ratio = rates["two-phase"] / rates["legacy (one transaction)"]
        print(f"  concurrency {concurrency}: two-phase / legacy throughput = {ratio:.2f}")
    await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=120)
    parser.add_argument("--kib", type=int, default=256)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="craig-bench-s3-"))
    s3 = SeaweedS3(root)
    s3.start()
    try:
        with postgres_database() as url:
            asyncio.run(run(url, s3, args.files, args.kib))
    finally:
        s3.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    main()
