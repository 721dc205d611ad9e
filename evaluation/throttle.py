"""A bound on calls in flight to one judge endpoint, shared by every worker process.

With a Redis broker the slots live in Redis: a sorted set of leases, renewed every quarter lease
while their call lasts, so a slot held by a worker that died frees itself one lease later (not
after the longest a call may take). On the embedded default they are lock files under
``var/judge-slots/``, one per slot, held with flock: every worker process on the machine shares
them (a prefork worker's children, several workers), and the kernel frees a dead process's
locks at once.

A holder made with ``keep=True`` keeps a thread's slot after a call that succeeded, for that
thread's next call: a worker answering a stream of calls pays Redis once per thread, not twice
per call. Kept slots count against the bound like any other and are renewed like them; the
holder gives them back with ``release_kept()`` once it has no more calls to start (and a call
that failed gives its slot back at once, so a retry's backoff holds none).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

import redis
from django.conf import settings

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  return 1
end
return 0
"""
POLL_SECONDS = 0.02


class FileSlots:
    """``limit`` slots of one endpoint shared by the processes of one machine: slot i is an
    exclusive flock on the file ``<folder>/<endpoint hash>.<i>``. Locks on separate opens of a
    file exclude each other within a process too, so each acquisition opens the file anew."""

    def __init__(self, *, folder: Path, endpoint: str, limit: int):
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(endpoint.encode()).hexdigest()[:32]
        self.paths = [folder / f"{digest}.{index}" for index in range(limit)]
        # Where this process looks first: threads spread over the slots instead of all trying
        # slot 0 first.
        self._next = 0
        self._next_lock = threading.Lock()

    def acquire(self) -> int:
        while True:
            with self._next_lock:
                start = self._next
                self._next = (self._next + 1) % len(self.paths)
            for step in range(len(self.paths)):
                path = self.paths[(start + step) % len(self.paths)]
                handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)
                    continue
                return handle
            time.sleep(POLL_SECONDS)

    @staticmethod
    def release(handle: int) -> None:
        os.close(handle)  # closing the only descriptor of this open releases its lock


class EndpointSlots:
    def __init__(
        self,
        *,
        endpoint: str,
        limit: int,
        redis_url: str | None,
        lease_seconds: float,
        keep: bool = False,
        folder: Path | None = None,
    ):
        self.key = f"floorboard:judge-slots:{endpoint}"
        self.limit = limit
        self.lease_seconds = lease_seconds
        self.redis = redis.Redis.from_url(redis_url) if redis_url else None
        self.keep = keep
        self._held: set[str] = set()
        # Slots kept between calls: thread -> (token, when kept) (see ``keep``).
        self._kept: dict[int, tuple[str, float]] = {}
        self._held_lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        if self.redis is not None:
            self._acquire_script = self.redis.register_script(_ACQUIRE)
        else:
            self.files = FileSlots(
                folder=folder or Path(settings.VAR_DIR) / "judge-slots",
                endpoint=endpoint,
                limit=limit,
            )

    @contextmanager
    def slot(self):
        if self.redis is None:
            handle = self.files.acquire()
            try:
                yield
            finally:
                self.files.release(handle)
            return
        thread = threading.get_ident()
        with self._held_lock:
            token, kept_at = self._kept.pop(thread, (None, 0.0))
        if token is not None and time.monotonic() - kept_at > self.lease_seconds / 4:
            # Kept longer than the renewer's round: given back rather than trusted.
            self._release([token])
            token = None
        if token is None:
            token = self._acquire()
        try:
            yield
        except BaseException:
            self._release([token])
            raise
        if self.keep:
            with self._held_lock:
                self._kept[thread] = (token, time.monotonic())
        else:
            self._release([token])

    def _acquire(self) -> str:
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
        return token

    def _release(self, tokens: list[str]) -> None:
        if not tokens:
            return
        with self._held_lock:
            self._held.difference_update(tokens)
        self.redis.zrem(self.key, *tokens)

    def release_kept(self) -> None:
        """Give back the slots kept between calls (none are in use: a slot in use is not
        kept)."""
        if self.redis is None:
            return
        with self._held_lock:
            tokens = [token for token, _ in self._kept.values()]
            self._kept.clear()
        self._release(tokens)

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
