"""What the request fingerprint costs per KiB: ordinary bodies against hostile ones, side by
side in one run. A hostile body is built to make a canonicaliser slow (huge exponents, long
mantissas, deep nesting, quoted ``;`` and escapes in part headers); the fingerprint must cost
about the same per KiB on it as on an ordinary body of the same size.

    .venv/bin/python -m bench.fingerprint [--kib 256] [--rounds 5]

Rounds alternate the bodies; medians are printed, with each hostile body's ratio to the
ordinary body of its kind (JSON or multipart).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from craig.domain.fingerprint import canonical_json, fingerprint, multipart_parts

JSON = "application/json"
BOUNDARY = "bench-boundary-0123456789"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def _fill(item: bytes, kib: int, open_: bytes = b"[", close: bytes = b"]") -> bytes:
    count = max(1, (kib * 1024 - len(open_) - len(close)) // (len(item) + 1))
    return open_ + b",".join([item] * count) + close


def _form(head: str, content: bytes) -> bytes:
    return f"--{BOUNDARY}\r\n{head}\r\n\r\n".encode() + content + f"\r\n--{BOUNDARY}--\r\n".encode()


def bodies(kib: int) -> dict[str, tuple[str, str, bytes]]:
    """name -> (kind, content type, body)."""
    referral = json.dumps(
        {
            "reporter": {"name": "Olive Neighbour", "phone": "+44 161 496 0000"},
            "child": {"first_name": "Rosalind", "age": 2},
            "concern": "left alone in the flat all night",
            "score": 12.5,
        }
    ).encode()
    deep = b"[" * 255 + b"1.50" + b"]" * 255
    upload = b"\x89PNG" + bytes(range(256)) * (kib * 4)
    hostile_head = (
        'Content-Disposition: form-data; name="file"; filename="'
        + 'r\\"e;p\\\\o;rt;' * (60 * 1024 // 15)
        + "\"; filename*=UTF-8''r%C3%A9port%3Bv2.pdf\r\nContent-Type: application/pdf"
    )
    return {
        "JSON: referral forms": ("json", JSON, _fill(referral, kib)),
        "JSON: 1e2000000, 1e-2000000": ("json", JSON, _fill(b"1e2000000,-1E-2000000", kib)),
        "JSON: 0.(4 KiB of zeros)1": ("json", JSON, _fill(b"0." + b"0" * 4096 + b"1", kib)),
        "JSON: 4 KiB mantissas, e+900": ("json", JSON, _fill(b"9" * 4096 + b"e+000900", kib)),
        "JSON: nested 255 deep": ("json", JSON, _fill(deep, kib)),
        "multipart: one file": ("multipart", MULTIPART, _form(_ordinary_head(), upload)),
        "multipart: 60 KiB quoted ;, escapes": ("multipart", MULTIPART, _form(hostile_head, upload)),
    }


def _ordinary_head() -> str:
    return 'Content-Disposition: form-data; name="file"; filename="scan.png"\r\nContent-Type: image/png'


def _read_as(kind: str, content_type: str, body: bytes) -> str:
    """Whether the body was canonicalised (else it is fingerprinted as raw bytes)."""
    try:
        canonical_json(body) if kind == "json" else multipart_parts(content_type, body)
    except ValueError:
        return "raw"
    return "canonical"


def _per_kib(content_type: str, body: bytes, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fingerprint(content_type, body)
    return (time.perf_counter() - started) / repeat / (len(body) / 1024)


def main(kib: int, rounds: int, repeat: int) -> None:
    cases = bodies(kib)
    costs: dict[str, list[float]] = {name: [] for name in cases}
    measure: Callable[[str], float] = lambda name: _per_kib(cases[name][1], cases[name][2], repeat)  # noqa: E731
    for name in cases:  # warm-up
        measure(name)
    for round_no in range(1, rounds + 1):
        for name in cases:
            costs[name].append(measure(name))
        print(f"round {round_no} done", flush=True)
    medians = {name: statistics.median(values) for name, values in costs.items()}
    ordinary = {"json": medians["JSON: referral forms"], "multipart": medians["multipart: one file"]}
    print(f"\nfingerprint cost, {kib} KiB bodies, median of {rounds} rounds x {repeat}:")
    print(f"  {'body':<38} {'size':>9} {'read as':>10} {'us/KiB':>9} {'x ordinary':>11}")
    for name, (kind, content_type, body) in cases.items():
        ratio = medians[name] / ordinary[kind]
        read_as = _read_as(kind, content_type, body)
        print(f"  {name:<38} {len(body) / 1024:7.0f} K {read_as:>10} {medians[name] * 1e6:9.2f} {ratio:10.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=256, help="size of every body (KiB)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="fingerprints per body per round")
    args = parser.parse_args()
    main(args.kib, args.rounds, args.repeat)
