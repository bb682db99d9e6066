"""When and how long to wait before retrying a failed request.

Modelled on the official OpenAI Python client: exponential backoff from 0.5 s
to at most 8 s with up to 25% jitter, unless the server says how long to wait
(``retry-after-ms`` or ``Retry-After``), which wins but is capped so a
misbehaving server cannot park newt for an hour.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime

INITIAL_DELAY_S = 0.5
MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 60.0

RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait, capped at MAX_RETRY_AFTER_S; None if unsaid."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    seconds: float | None = None
    if "retry-after-ms" in lower:
        try:
            seconds = float(lower["retry-after-ms"]) / 1000.0
        except ValueError:
            seconds = None
    if seconds is None and "retry-after" in lower:
        raw = lower["retry-after"].strip()
        try:
            seconds = float(raw)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(raw).timestamp() - time.time()
            except (TypeError, ValueError, IndexError):
                seconds = None
    if seconds is None:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def backoff_delay(
    attempt: int,
    retry_after: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """Delay before retry number ``attempt + 1`` (attempt counts from 0)."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER_S)
    base = min(INITIAL_DELAY_S * (2**attempt), MAX_BACKOFF_S)
    return base * (1.0 - 0.25 * rand())
