"""A bound on calls in flight to one judge endpoint, shared by every worker process.

With a Redis broker the slots live in Redis (a sorted set of leases, so a slot held by a worker
that died frees itself); on the embedded default they are a semaphore in this process.
"""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager

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
        try:
            yield
        finally:
            self.redis.zrem(self.key, token)
