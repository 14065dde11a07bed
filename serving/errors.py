"""The error a stage of the ingress's pipeline raises, shared by the JSON and the streaming ask
(serving/app.py answers it with its HTTP status, serving/page.py streams it as an event)."""

from __future__ import annotations


class StageFailed(Exception):
    """A stage could not produce its part; `status` is the HTTP status the client gets."""

    def __init__(self, stage: str, status: int, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage, self.status, self.message, self.retry_after_s = stage, status, message, retry_after_s
