"""A bound on calls in flight to one judge endpoint, shared by every worker process.

With a Redis broker the slots live in Redis: a sorted set of leases, renewed every quarter lease
while their call lasts, so a slot held by a worker that died frees itself one lease later (not
after the longest a call may take). On the embedded default they are a semaphore in this process.
"""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager, suppress

import redis

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  return 1
end
return 0
"""
POLL_SECONDS = 0.02

_local_lock = threading.Lock()
_local: dict[tuple[str, int], threading.BoundedSemaphore] = {}


class EndpointSlots:
    def __init__(self, *, endpoint: str, limit: int, redis_url: str | None, lease_seconds: float):
        self.key = f"floorboard:judge-slots:{endpoint}"
        self.limit = limit
        self.lease_seconds = lease_seconds
        self.redis = redis.Redis.from_url(redis_url) if redis_url else None
        self._held: set[str] = set()
        self._held_lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        if self.redis is not None:
            self._acquire_script = self.redis.register_script(_ACQUIRE)
        else:
            with _local_lock:
                self.semaphore = _local.setdefault(
                    (endpoint, limit), threading.BoundedSemaphore(limit)
                )

    @contextmanager
    def slot(self):
        if self.redis is None:
            with self.semaphore:
                yield
            return
        token = uuid.uuid4().hex
        while True:
            now = time.time()
            if self._acquire_script(
                keys=[self.key], args=[now, now + self.lease_seconds, self.limit, token]
            ):
                break
            time.sleep(POLL_SECONDS)
        with self._held_lock:
            self._held.add(token)
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._renew, name="judge-slot-leases", daemon=True
                )
                self._renewer.start()
        try:
            yield
        finally:
            with self._held_lock:
                self._held.discard(token)
            self.redis.zrem(self.key, token)

    def _renew(self) -> None:
        """Extend this process's leases while it holds any; stops when it holds none."""
        interval = max(0.05, self.lease_seconds / 4)
        while True:
            time.sleep(interval)
            with self._held_lock:
                tokens = list(self._held)
                if not tokens:
                    self._renewer = None
                    return
            until = time.time() + self.lease_seconds
            # XX: only leases still held (one that lapsed is not revived); a failure is tried
            # again next round.
            with suppress(redis.RedisError):
                self.redis.zadd(self.key, dict.fromkeys(tokens, until), xx=True)
