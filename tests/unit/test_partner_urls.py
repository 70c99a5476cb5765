"""Partner URLs an HTTP client cannot use: refused at registration (a 422 ``invalid-partner``,
never a ``ValueError``), and for partners stored before that, a failure of the partner rather
than an exception: the gateway answers a ``protocol`` failure or an ``UpstreamError``, and
``DispatchSendJob`` fails their jobs at once. A gateway that raises anyway costs the job an
attempt (retried on the backoff, failed after the last) instead of leaving it to its lease."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from craig.adapters.partners.http import HttpPartnerGateway
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED
from craig.domain.exchange import DispatchResult, JobStatus, PartnerAnswer, TransportFailure
from craig.domain.partners import InvalidPartner, Partner, shown_url, unusable_reason
from craig.ports.errors import UndecryptableData
from craig.ports.exchange import Claim, Delivery, Pace, PartnerGateway, UpstreamError
from craig.usecases.exchange import DispatchSendJob, SendPolicy
from tests.support.backends import Backend, memory_backend
from tests.support.exchange_data import a_partner, add_partner, add_transaction
from tests.unit.test_exchange_inputs import partner

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = SendPolicy(backoff=(timedelta(seconds=7), timedelta(seconds=40)), max_attempts=3)

#: What the auditor found (a 500 at registration, or 500s on every later read), and kin.
UNUSABLE_URLS = [
    "https://[::1",  # urlsplit: ValueError("Invalid IPv6 URL")
    "https://\u2603.example",  # IDNA 2003 encodes the snowman; IDNA 2008 (httpx) refuses it
    "https://xn--a.example",  # an A-label that does not decode
    "https://xn--n3h.example",  # the snowman's A-label
    "https://[1.2.3]",
    "https://999.1.1.1",
    "https://127.0.0.1:99999",
    "https://partner.example:abc",
    "https://partner.example:80:90",
    "https://[::1]x",
    "https://part\tner.example",  # urlsplit drops the tab; httpx refuses the URL
    "https://bücher.ex_ample",  # in an internationalised name every label must be IDNA
    "https://xn--bcher-kva.my_service.example",  # so in one that starts with an A-label
]

USABLE_URLS = [
    "https://partner.example/api",
    "http://127.0.0.1:9",
    "https://[::1]:8443/api",
    "https://[fe80::1%25eth0]",
    "https://bücher.example",
    "https://xn--bcher-kva.example",
    "https://straße.de",
    "https://中国.icom.museum",
    "https://ÜNICODE.example",
    "https://partner.example.",
    "https://a_b.example",  # an ASCII name goes out as it is
]


def httpx_can_request(url: str) -> bool:
    """What the gateway needs of a URL: httpx parses it, reads its host and port, and the port
    is one a socket takes."""
    try:
        parsed = httpx.URL(url + "/records").copy_merge_params({"page": "1"})
        _ = parsed.host
        port = parsed.port
    except (httpx.InvalidURL, ValueError):
        return False
    return port is None or 0 <= port <= 65535


def accepted(url: str) -> bool:
    try:
        partner(base_url=url)
    except InvalidPartner:
        return False
    return True


@pytest.mark.parametrize("url", UNUSABLE_URLS)
@pytest.mark.parametrize("field", ["base_url", "token_url"])
def test_a_url_httpx_cannot_request_is_an_invalid_partner(field: str, url: str) -> None:
    with pytest.raises(InvalidPartner) as refused:
        partner(**{field: url})
    assert refused.value.code == "invalid-partner" and refused.value.detail.startswith(field)
    assert url not in refused.value.detail


def test_registration_accepts_exactly_what_httpx_can_request_in_these_cases() -> None:
    verdicts = {url: (accepted(url), httpx_can_request(url)) for url in UNUSABLE_URLS + USABLE_URLS}
    assert {url: v for url, v in verdicts.items() if v[0] != v[1]} == {}
    assert all(accepted(url) for url in USABLE_URLS)


@pytest.mark.parametrize(
    "url", ["https://user:pw@partner.example:8080", "https://user@partner.example", "https://@x.example"]
)
@pytest.mark.parametrize("field", ["base_url", "token_url"])
def test_a_url_carrying_credentials_is_refused_though_httpx_could_request_it(field: str, url: str) -> None:
    """Partners are listed to everyone signed in: a password in a URL would be shown to them all."""
    with pytest.raises(InvalidPartner) as refused:
        partner(**{field: url})
    assert refused.value.detail.startswith(f"{field} must not carry a user name or password")
    assert "pw" not in refused.value.detail


@pytest.mark.parametrize(
    "url",
    [
        "http://partner.example/api",
        "http://10.0.0.7:8080",
        "http://[fe80::1]",
        "http://127.1",  # not the dotted form: a name, not an address on this machine
        "http://localhost.partner.example",
        "http://foo.localhost",
        "http://0.0.0.0",
        "http://[::]",
        "http://[::ffff:10.0.0.1]",
        "HTTP://Partner.Example",
    ],
)
@pytest.mark.parametrize("field", ["base_url", "token_url"])
def test_plain_http_to_another_machine_is_refused(field: str, url: str) -> None:
    """The token request carries the client secret and a send a child's record: in clear only
    to this machine (a TLS proxy in front of a partner, or a test's fake)."""
    with pytest.raises(InvalidPartner) as refused:
        partner(**{field: url})
    assert refused.value.detail.startswith(f"{field} must use https: plain http is allowed only to this machine")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9",
        "http://127.8.9.10",
        "http://[::1]:8080/api",
        "http://[::ffff:127.0.0.1]",
        "http://[::1%25lo]",
        "http://localhost:8443",
        "http://localhost.",
        "HTTPS://p.example",
    ],
)
def test_plain_http_to_this_machine_and_https_anywhere_are_accepted(url: str) -> None:
    assert partner(base_url=url, token_url=url).base_url == url


def test_a_partner_stored_with_plain_http_before_the_rule_keeps_working() -> None:
    stored = stored_partner(base_url="http://partner.example/api", token_url="http://partner.example/token")
    assert unusable_reason(stored, "/transactions") is None


@pytest.mark.parametrize("path", ["/trans\nactions", "/records\t", "/a\x00b"])
def test_a_path_with_a_control_character_is_refused(path: str) -> None:
    with pytest.raises(InvalidPartner):
        partner(send_path=path)
    with pytest.raises(InvalidPartner):
        partner(records_path=path)


#: Pieces of hosts: ASCII, IDNA-valid and -invalid letters, marks, joiners, dots, ports, brackets.
HOST_PIECES = st.sampled_from(
    "a z 0 - _ . xn-- n3h bcher-kva \u2603 \u00fc \u00df \u03c2 \u05d0 \u0628 \u0661 \u4e2d \u0301 \u200d "
    "\u00b7 \u3002 : 8080 [ ] ::1 @ \u00dc \u01c5".split()
)


@given(st.lists(HOST_PIECES, min_size=1, max_size=8).map("".join))
@example("\u2603.example")
@example("xn--a.example")
@example("[::1")
@example("bücher.\u2603")
def test_whatever_registration_accepts_httpx_can_request(host: str) -> None:
    url = f"https://{host}"
    assert not accepted(url) or httpx_can_request(url), url


# --- the gateway, for a partner stored before registration refused its URLs -----------------


def stored_partner(**urls: Any) -> Partner:
    """A partner as a repository reads it back: built without the registration rules."""
    return attrs.evolve(partner(), **urls)


async def never_paced() -> None:
    raise AssertionError("no request may be made")


@pytest.fixture
async def gateway() -> AsyncIterator[HttpPartnerGateway]:
    gateway = HttpPartnerGateway(connect_timeout_seconds=1, read_timeout_seconds=1, max_connections=2)
    try:
        yield gateway
    finally:
        await gateway.aclose()


@pytest.mark.parametrize(
    "url", ["https://[::1", "https://\u2603.example", "https://xn--a.example", "http://127.0.0.1:99999"]
)
async def test_the_gateway_answers_an_unusable_url_as_a_failure_not_an_exception(
    gateway: HttpPartnerGateway, url: str
) -> None:
    delivery = Delivery(uuid.uuid4(), {"case": "c-1"})
    sent = await gateway.send(stored_partner(token_url=url + "/token"), delivery, never_paced)
    assert isinstance(sent, TransportFailure) and sent.kind == "protocol" and sent.at_token_endpoint
    assert sent.detail.startswith("unusable URL")
    sent = await gateway.send(stored_partner(base_url=url), delivery, never_paced)
    assert isinstance(sent, TransportFailure) and sent.kind == "protocol" and not sent.at_token_endpoint
    with pytest.raises(UpstreamError) as failed:
        await gateway.get_json(stored_partner(base_url=url), "/records", {"page": "1"}, never_paced)
    assert failed.value.path == "/records" and "unusable URL" in failed.value.detail
    with pytest.raises(UpstreamError):
        await gateway.get_json(stored_partner(token_url=url), "/records", {"page": "1"}, never_paced)


# --- DispatchSendJob --------------------------------------------------------------------------


class Gateway(PartnerGateway):
    """Answers ``answer``, or raises ``error`` after awaiting ``pace`` once."""

    def __init__(self, answer: DispatchResult | None = None, error: Exception | None = None) -> None:
        self.answer, self.error = answer, error
        self.sends = 0

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        self.sends += 1
        await pace()
        if self.error is not None:
            raise self.error
        assert self.answer is not None
        return self.answer

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


async def unpaced() -> None:
    return None


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    async with memory_backend() as harness:
        yield harness


async def claimed(backend: Backend) -> Claim:
    stored = await add_partner(backend, a_partner(rate_limit_rpm=6000))
    await add_transaction(backend, [stored.id])
    [claim] = (await backend.send_job_queue.run_pass([], 1, POLICY.lease, POLICY.max_rate_wait)).claims
    assert claim.partner is not None and claim.slot is not None and claim.slot.granted
    return claim


def dispatcher(backend: Backend, gateway: PartnerGateway, policy: SendPolicy = POLICY) -> DispatchSendJob:
    assert backend.clock is not None
    return DispatchSendJob(gateway, backend.clock, policy)


@pytest.mark.parametrize("urls", [{"base_url": "https://\u2603.example"}, {"token_url": "https://[::1/token"}])
async def test_a_job_of_a_partner_with_unusable_urls_fails_at_once_unsent(
    backend: Backend, urls: dict[str, Any]
) -> None:
    claim = await claimed(backend)
    assert claim.partner is not None
    broken = Claim(claim.job, attrs.evolve(claim.partner, **urls), claim.slot)
    gateway = Gateway()
    dispatched = await dispatcher(backend, gateway)(broken, unpaced)
    assert dispatched.name == "failed" and dispatched.outcome is not None and gateway.sends == 0
    assert dispatched.outcome.decision.status is JobStatus.FAILED
    error = dispatched.outcome.decision.error
    assert error is not None and error.startswith("the partner's URLs are unusable: ")
    event = dispatched.outcome.event
    assert event is not None and event.type == EXCHANGE_SEND_FAILED.name


async def test_a_gateway_that_raises_costs_an_attempt_and_fails_the_job_after_the_last(backend: Backend) -> None:
    claim = await claimed(backend)
    crashing = Gateway(error=RuntimeError("a bug"))
    retried = await dispatcher(backend, crashing)(claim, unpaced)
    assert retried.name == "retry" and retried.outcome is not None
    decision = retried.outcome.decision
    assert decision.status is JobStatus.PENDING and decision.retry_in == timedelta(seconds=7)
    assert decision.error == "protocol at the partner (the gateway crashed, RuntimeError)"
    last = await dispatcher(backend, crashing, SendPolicy(backoff=POLICY.backoff, max_attempts=1))(claim, unpaced)
    assert last.name == "failed" and last.outcome is not None
    assert last.outcome.event is not None and last.outcome.event.type == EXCHANGE_SEND_FAILED.name
    result = await backend.send_job_queue.run_pass([retried.outcome], 0, POLICY.lease, POLICY.max_rate_wait)
    assert result.recorded == {claim.job.id}


class WrappingGateway(Gateway):
    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        try:
            await pace()
        except ConnectionError as error:
            raise RuntimeError("pacing failed") from error
        return PartnerAnswer(200)


async def test_only_the_gateways_own_exceptions_cost_an_attempt(backend: Backend) -> None:
    """``pace`` failing (the rate limit's database went away) still propagates, the job left to
    its lease, even when the gateway wraps the error; so does an infrastructure error (a payload
    that does not decrypt). The gateway's own error is an attempt."""
    claim = await claimed(backend)
    with pytest.raises(UndecryptableData):
        await dispatcher(backend, Gateway(error=UndecryptableData("payload")))(claim, unpaced)

    async def database_gone() -> None:
        raise ConnectionError("the rate limit's database went away")

    with pytest.raises(ConnectionError):
        await dispatcher(backend, Gateway(PartnerAnswer(200)))(claim, database_gone)
    with pytest.raises(RuntimeError):
        await dispatcher(backend, WrappingGateway())(claim, database_gone)
    crashed = await dispatcher(backend, Gateway(error=KeyError("x")))(claim, unpaced)
    assert crashed.outcome is not None and crashed.outcome.decision.error is not None
    assert crashed.outcome.decision.error.endswith("(the gateway crashed, KeyError)")


@pytest.mark.parametrize("url", ["https://a b.example", "https://a%41.example", 'https://a"b.example', "https://{a}.x"])
def test_an_ascii_host_with_a_character_no_host_name_has_is_refused(url: str) -> None:
    """httpx would percent-encode these and send them: no DNS name holds them."""
    assert not accepted(url)


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("https://user:pw@partner.example:8080/api", "https://***@partner.example:8080/api"),
        ("https://user@[::1]:8443", "https://***@[::1]:8443"),
        ("https://a:b@c@partner.example/p?q=1", "https://***@partner.example/p?q=1"),
        ("https://partner.example/a@b", "https://partner.example/a@b"),
        ("https://partner.example:8080", "https://partner.example:8080"),
        ("https://[::1", "https://[::1"),  # stored before the rules: urlsplit refuses it
        ("https://u:p@[::1", "https://***@[::1"),
        ("u:p@partner.example", "***"),
    ],
)
def test_a_url_is_shown_without_the_credentials_a_partner_was_stored_with(stored: str, shown: str) -> None:
    assert shown_url(stored) == shown
