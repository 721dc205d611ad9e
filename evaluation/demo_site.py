"""Where `make demo` can be reached, from the address it serves on (HOST:PORT): the site URL its
e-mails and printed invite links use, and the host names its web server accepts.

Served on one address (127.0.0.1:8101, say), the demo's links name that address. Served on every
interface (HOST=0.0.0.0 or ::), other machines reach it by this machine's name or address, never
by 0.0.0.0: its links name the machine's primary address, and the server accepts the machine's
names and addresses besides the local ones. FLOORBOARD_SITE_URL and DJANGO_ALLOWED_HOSTS set in
the environment are kept as they are.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

WILDCARDS = frozenset({"0.0.0.0", "::", ""})
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# A documentation address (RFC 5737): connecting a UDP socket to it sends nothing, but picks the
# interface the machine would route through, whose address other machines can reach.
ROUTE_PROBE = ("192.0.2.1", 9)


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of runserver's HOST:PORT ("[::]:8000" for IPv6; a bare port is local)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _primary_address() -> str:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(ROUTE_PROBE)
        return probe.getsockname()[0]
    return ""


def machine_hosts() -> list[str]:
    """This machine's names and addresses, as other machines may send them in Host."""
    names = [socket.gethostname(), socket.getfqdn(), _primary_address()]
    with contextlib.suppress(OSError):
        names += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)]
    found = []
    for name in names:
        name = f"[{name}]" if ":" in name else name
        if name and name not in found:
            found.append(name)
    return found


def reachable_host(host: str) -> str:
    """The host a link should name for a server bound to ``host``."""
    if host.strip("[]") not in WILDCARDS:
        return f"[{host}]" if ":" in host.strip("[]") else host
    return _primary_address() or socket.gethostname() or "127.0.0.1"


def site_url(address: str) -> str:
    host, port = split_address(address)
    return f"http://{reachable_host(host)}:{port}"


def reachable_url(url: str) -> str:
    """``url`` with a wildcard host (http://0.0.0.0:8000) replaced by a reachable one."""
    parts = urlsplit(url)
    if (parts.hostname or "") not in WILDCARDS:
        return url
    netloc = reachable_host(parts.hostname or "")
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def demo_environment(address: str, environ: Mapping[str, str]) -> dict[str, str]:
    """What the demo's processes add to their environment when served on ``address``."""
    host, _ = split_address(address)
    added = {}
    if not environ.get("FLOORBOARD_SITE_URL"):
        added["FLOORBOARD_SITE_URL"] = site_url(address)
    if not environ.get("DJANGO_ALLOWED_HOSTS"):
        extra = machine_hosts() if host in WILDCARDS else [reachable_host(host)]
        allowed = [*LOCAL_HOSTS, *(name for name in extra if name not in LOCAL_HOSTS)]
        added["DJANGO_ALLOWED_HOSTS"] = ",".join(allowed)
    return added
