"""The embedded default's Celery broker: kombu's filesystem transport, made safe to share.

kombu's producer opens a message file in the queue folder and then writes it, while a consumer
lists the folder, moves any file it finds and parses it: a consumer that comes between the two
reads an empty or half-written message, and the JSONDecodeError it raises stops the worker
(celery/kombu#1551). Here a message is written under a name no consumer takes (``.tmp`` after
the queue's suffix) and renamed into place once whole, so a consumer only ever sees whole
messages; one that still does not decode (a file put there by hand, a disk that filled up) is
moved to the quarantine folder with a warning, and the worker goes on to the next. Consumed
messages pass through the processed folder beside the queue, never the system's temp folder.

config/celery.py makes this the transport of every ``filesystem://`` URL.

Chosen over kombu's SQLAlchemy transport on an SQLite file of its own, which is transactional
by construction, by measurement on the development machine (a Celery worker with the solo pool,
beat inside; a chain of tasks each queueing the next, 3 x 100 hops; a task sent to an idle
worker, 30 times; the worker idle for 60 s, twice): this transport 0.9 ms from one stage to the
next, 10 ms until an idle worker takes a task, 1.1% of a core idle; SQLAlchemy at its default
one-second polling 6.8 ms, about 850 ms and 0.3%; polling every 20 ms, 7.3 ms, 27 ms and 8.5%.
Every stage of a submission queues the next, and a web request queues the first.
"""

from __future__ import annotations

import logging
import os
import uuid
from contextlib import suppress
from pathlib import Path
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

UNFINISHED = ".tmp"


class Channel(filesystem.Channel):
    @property
    def quarantine_folder(self) -> Path:
        """Settings name it; without a name, beside the processed folder."""
        named = self.transport_options.get("quarantine_folder")
        return Path(named) if named else Path(self.processed_folder).parent / "quarantine"

    def _put(self, queue, payload, **kwargs):
        # kombu's own name: the milliseconds sort the queue, the queue's name ends it.
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        unfinished = final + UNFINISHED
        try:
            with open(unfinished, "wb") as handle:
                handle.write(dumps(payload).encode())
            os.replace(unfinished, final)
        except OSError as exc:
            with suppress(OSError):
                os.remove(unfinished)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            taken = os.path.join(self.processed_folder, name)
            try:
                # Taken by the rename: a consumer that loses the race finds the file gone.
                os.replace(os.path.join(self.data_folder_in, name), taken)
            except OSError:
                continue
            try:
                with open(taken, "rb") as handle:
                    payload = handle.read()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            try:
                message = loads(payload.decode())
            except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
                self._quarantine(taken, name, len(payload))
                continue
            if not isinstance(message, dict):
                self._quarantine(taken, name, len(payload))
                continue
            if not self.store_processed:
                os.remove(taken)
            return message
        raise Empty()

    def _quarantine(self, taken: str, name: str, size: int) -> None:
        self.quarantine_folder.mkdir(parents=True, exist_ok=True)
        os.replace(taken, self.quarantine_folder / name)
        logger.warning(
            "broker: message %s (%d bytes) is not a whole message; moved to %s",
            name,
            size,
            self.quarantine_folder,
        )


class Transport(filesystem.Transport):
    Channel = Channel
