"""A client generated from the served document by an off-the-shelf generator (openapi-python-client),
unmodified, works: it opens a case, records a contact, uploads and downloads an attachment, and
reads a problem and the page its type resolves to. Generation is offline, into a temp dir."""

from __future__ import annotations

import asyncio
import importlib
import io
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import pytest

from craig.domain.access import Role
from tests.support.apps import serving, token
from tests.support.files import png_bytes

pytestmark = pytest.mark.e2e

PACKAGE = "craig_generated_client"
GENERATE_TIMEOUT_SECONDS = 300


async def _generate(document: Path, into: Path) -> None:
    config = into / "generator.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: the generated code is used as generated
    generator = Path(sys.executable).with_name("openapi-python-client")
    process = await asyncio.create_subprocess_exec(
        str(generator),
        "generate",
        "--path",
        str(document),
        "--meta",
        "none",
        "--output-path",
        str(into / PACKAGE),
        "--config",
        str(config),
        cwd=into,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), GENERATE_TIMEOUT_SECONDS)
    assert process.returncode == 0, output.decode(errors="replace")


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[Any]:
    """Imports modules of the generated package from ``tmp_path``; forgets them afterwards."""
    sys.path.insert(0, str(tmp_path))

    def load(name: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{name}")

    try:
        yield load
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


async def test_generated_client_works(tmp_path: Path, imported: Any) -> None:
    async with serving("memory", tmp_path / "data") as (container, http):
        document = tmp_path / "openapi.json"
        document.write_bytes((await http.get("/api-doc/openapi.json")).content)
        await _generate(document, tmp_path)

        client_module = imported("client")
        types = imported("types")
        models = imported("models")
        open_case = imported("api.cases.open_case")
        get_case = imported("api.cases.get_case")
        record_contact = imported("api.contacts.record_contact")
        upload_attachment = imported("api.attachments.upload_attachment")
        download_attachment = imported("api.attachments.download_attachment")
        get_problem_type = imported("api.problems.get_problem_type")

        client = client_module.AuthenticatedClient(
            base_url=str(http.base_url).rstrip("/"), token=token(container, role=Role.SUPERVISOR)
        )
        async with client:
            opened = await open_case.asyncio_detailed(
                client=client, body=models.NewCase(title="Doe family"), idempotency_key=str(uuid4())
            )
            assert opened.status_code == 201 and isinstance(opened.parsed, models.CaseView)
            case = opened.parsed
            assert case.title == "Doe family" and opened.headers["location"] == f"/v1/cases/{case.id}"

            contact = await record_contact.asyncio(
                case.id,
                client=client,
                body=models.NewContact(
                    contact_type=models.NewContactContactType.HOME_VISIT,
                    occurred_at=datetime(2026, 1, 5, 10, tzinfo=UTC),
                    summary="Saw both children.",
                ),
            )
            assert isinstance(contact, models.ContactView) and contact.contact_type == models.ContactType.HOME_VISIT

            picture = png_bytes()
            form = models.UploadAttachmentAttachmentUpload(
                file=types.File(payload=io.BytesIO(picture), file_name="photo.png", mime_type="image/png"),
                attachment_type="photo",
            )
            uploaded = await upload_attachment.asyncio(case.id, contact.id, client=client, body=form)
            assert isinstance(uploaded, models.AttachmentView), uploaded
            assert uploaded.file_size == len(picture) and uploaded.object_status == models.ObjectStatus.PRESENT

            downloaded = await download_attachment.asyncio(case.id, contact.id, uploaded.id, client=client)
            assert isinstance(downloaded, types.File) and downloaded.payload.read() == picture

            missing = await get_case.asyncio(uuid4(), client=client)
            assert isinstance(missing, models.Problem) and missing.status == 404
            type_uri = urlsplit(missing.type_)
            assert f"{type_uri.scheme}://{type_uri.netloc}" == str(http.base_url).rstrip("/")
            code = type_uri.path.removeprefix("/problems/")
            page = await get_problem_type.asyncio(code, client=client)
            assert isinstance(page, str) and "Not found" in page

            unknown = await get_problem_type.asyncio("no-such-problem", client=client)
            assert isinstance(unknown, models.Problem) and unknown.status == 404
