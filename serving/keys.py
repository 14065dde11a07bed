"""API keys, hashed at rest, and a request-rate limit for each.

Why hashes: the keys file (`serve.api_keys_file`, written by `soay keys add`) sits on disk and in
cluster manifests (a Secret); a copy of it must not let anyone in. A key is 32 random bytes, so
a plain SHA-256 of it cannot be searched, and the service only ever compares digests.

The limit is a token bucket per key (`rate_per_s` tokens a second, at most `burst` saved up), kept by
each ingress replica: with N ingress replicas a key may get up to N times its rate, which the
manifests bound by the ingress's `max_replicas`.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

KEY_PREFIX = "soay-"


class KeyEntry(BaseModel):
    """One key as the keys file holds it: never the key itself."""

    name: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    rate_per_s: float | None = Field(None, gt=0)
    """Requests a second this key may make; None takes `serve.rate_per_key`."""
    burst: int | None = Field(None, ge=1)
    """Requests this key may make at once after a quiet spell; None takes `serve.burst_per_key`."""


class KeysFile(BaseModel):
    keys: list[KeyEntry] = []


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def read_keys(path: Path) -> list[KeyEntry]:
    """The keys of a keys file; none when it does not exist."""
    if not path.is_file():
        return []
    return KeysFile.model_validate(yaml.safe_load(path.read_text()) or {}).keys


def add_key(path: Path, name: str, rate_per_s: float | None = None, burst: int | None = None) -> str:
    """Make a key, store its digest under `name` (replacing a key of that name) and return the key:
    the only time it is ever seen."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    kept = [k for k in read_keys(path) if k.name != name]
    kept.append(KeyEntry(name=name, sha256=digest(key), rate_per_s=rate_per_s, burst=burst))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(KeysFile(keys=kept).model_dump(exclude_none=True), sort_keys=False))
    path.chmod(0o600)
    return key


@dataclass
class _Bucket:
    tokens: float
    updated: float


class KeyRing:
    """Who a request's key belongs to, and whether that key may make another request now."""

    def __init__(self, keys: list[KeyEntry], rate_per_s: float, burst: int) -> None:
        self._by_digest = {k.sha256: k for k in keys}
        self._rate, self._burst = rate_per_s, burst
        self._buckets: dict[str, _Bucket] = {}

    @property
    def required(self) -> bool:
        """Whether requests need a key: there is at least one."""
        return bool(self._by_digest)

    def identify(self, presented: str) -> KeyEntry | None:
        """The key's entry, or None for a missing or unknown key."""
        return self._by_digest.get(digest(presented)) if presented else None

    def wait_s(self, entry: KeyEntry) -> float:
        """0 when the key may make a request now (and it is counted), else the seconds until it may."""
        rate, burst = entry.rate_per_s or self._rate, entry.burst or self._burst
        now = time.monotonic()
        bucket = self._buckets.setdefault(entry.name, _Bucket(float(burst), now))
        bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / rate


def retry_after(seconds: float) -> str:
    """A Retry-After value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
