"""The S3 backend the site runs on: django-storages' S3Storage with every call bounded.

Each request to the bucket gives up on a connection after STORAGE_CONNECT_TIMEOUT_SECONDS and on
a silent answer after STORAGE_READ_TIMEOUT_SECONDS, and is tried STORAGE_MAX_ATTEMPTS times in
all, with botocore's exponential back-off (with jitter) in between; a store that hangs costs a
caller a bounded time, never a worker's life. Links are signed with SigV4 for the region in
settings (buckets refuse the older signature), and signed for the address browsers use
(``public_endpoint_url``) when the site reaches the store under a private name.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

from botocore.config import Config
from django.conf import settings
from storages.backends.s3 import S3Storage as BaseS3Storage
from storages.utils import clean_name


def client_config(
    *, connect_timeout: float, read_timeout: float, max_attempts: int, addressing_style=None
) -> Config:
    """A botocore client configuration with these bounds, SigV4 signatures, and the standard
    retry mode (exponential back-off with jitter on connection errors, timeouts, throttling and
    5xx answers)."""
    return Config(
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        signature_version="s3v4",
        s3={"addressing_style": addressing_style or "auto"},
    )


def site_client_config() -> Config:
    return client_config(
        connect_timeout=settings.STORAGE_CONNECT_TIMEOUT_SECONDS,
        read_timeout=settings.STORAGE_READ_TIMEOUT_SECONDS,
        max_attempts=settings.STORAGE_MAX_ATTEMPTS,
    )


def origin(url: str) -> str:
    """scheme://host[:port] of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class S3Storage(BaseS3Storage):
    """S3Storage with bounded calls, SigV4 and links for the public endpoint. Options beyond
    django-storages' own: ``public_endpoint_url`` (default: ``endpoint_url``)."""

    def __init__(self, **options):
        self.public_endpoint_url = options.pop("public_endpoint_url", None) or None
        options.setdefault("client_config", site_client_config())
        options.setdefault("signature_version", "s3v4")
        super().__init__(**options)
        self._public = threading.local()

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_public", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._public = threading.local()

    @property
    def public_client(self):
        """The client links are signed with: the same credentials, region and configuration,
        for the endpoint browsers reach (signing makes no request)."""
        if not self.public_endpoint_url or self.public_endpoint_url == self.endpoint_url:
            return self.connection.meta.client
        client = getattr(self._public, "client", None)
        if client is None:
            client = self._create_session().client(
                "s3",
                region_name=self.region_name,
                endpoint_url=self.public_endpoint_url,
                config=self.client_config,
                verify=self.verify,
            )
            self._public.client = client
        return client

    def url(self, name, parameters=None, expire=None, http_method=None):
        params = dict(parameters or {})
        params["Bucket"] = self.bucket_name
        params["Key"] = self._normalize_name(clean_name(name))
        return self.public_client.generate_presigned_url(
            "get_object",
            Params=params,
            ExpiresIn=self.querystring_expire if expire is None else expire,
            HttpMethod=http_method,
        )
