"""The send-job INSERT's parameter: one JSON document, a row a job; text that cannot be encoded
is refused as invalid data (as PostgreSQL refused it when the jobs went as arrays)."""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime

import pytest

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.adapters.postgres.send_jobs import add_params
from craig.adapters.sealed_fields import SEND_JOB_PAYLOAD, unseal_json
from craig.adapters.telemetry import originating
from craig.domain.exchange import SendJob
from craig.ports.errors import InvalidData
from craig.usecases.ids import new_id

pytestmark = pytest.mark.unit

CIPHER = FieldEncryptor.from_setting(base64.b64encode(os.urandom(32)).decode())


def job(**fields: object) -> SendJob:
    now = datetime.now(UTC)
    values: dict[str, object] = dict(
        id=new_id(),
        transaction_id=new_id(),
        partner_id=new_id(),
        correlation_id=new_id(),
        payload={"n": 1, "name": "é"},
        next_attempt_at=now,
        created_at=now,
    )
    return SendJob(**(values | fields))  # type: ignore[arg-type]


def test_each_job_is_a_row_of_the_document_its_payload_sealed_for_its_row() -> None:
    jobs = [job(), job(origin_request_id="its-own", traceparent=f"00-{'1' * 32}-{'2' * 16}-01")]
    with originating("req-1"):
        rows = json.loads(add_params(jobs, CIPHER)["jobs"])
    assert [row["id"] for row in rows] == [str(j.id) for j in jobs]
    assert rows[0]["origin_request_id"] == "req-1" and rows[0]["traceparent"] is None
    assert rows[1]["origin_request_id"] == "its-own" and rows[1]["traceparent"] == jobs[1].traceparent
    for row, made in zip(rows, jobs, strict=True):
        assert row["transaction_id"] == str(made.transaction_id) and row["partner_id"] == str(made.partner_id)
        assert unseal_json(CIPHER, SEND_JOB_PAYLOAD, made.id, row["payload"]) == made.payload


@pytest.mark.parametrize("field", ["origin_request_id", "traceparent"])
def test_a_lone_surrogate_is_invalid_data_not_an_encoding_error(field: str) -> None:
    with pytest.raises(InvalidData):
        add_params([job(**{field: "a\ud800b"})], CIPHER)
