"""Which addresses a fetch may connect to: the server-side request forgery guard.

A URL names a host; the host resolves to addresses; the fetch connects to one of them. A
caller who can name the URL must not reach what only this machine can (its loopback, the
private network, the cloud's metadata endpoint at 169.254.169.254), so every address a name
resolves to is checked, and one refused address refuses the name (a resolver answering a
public and a private address is a rebinding attempt). The fetch then connects to an address
checked here, never to a fresh resolution of the name.

Refused unless the operator's allow-list names them: loopback, private (RFC 1918, unique
local), shared (100.64/10), link-local, multicast, reserved, unspecified, documentation and
benchmarking ranges (anything Python's :mod:`ipaddress` does not call global), and IPv6
forms that embed such an IPv4 address (IPv4-mapped, 6to4, NAT64's well-known prefix). The
allow-list is the operator's (``--allow-host``, ``CITEWELL_FETCH_ALLOW``), never an API
caller's: CIDRs, or host names whose addresses are then taken as they resolve.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from citewell.errors import FetchFailed, UrlRefused
from citewell.settings import allow_entry

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")



def _embedded(address: Address) -> Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64), if any."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refused_because(address: Address) -> str | None:
    """Why a fetch may not connect to ``address`` by default; None for a public address."""
    inner = _embedded(address)
    if inner is not None:
        why = refused_because(inner)
        return f"{why} (inside {address})" if why else None
    for test, why in (("is_loopback", "a loopback address"),
                      ("is_link_local", "a link-local address (the cloud metadata endpoint's range)"),
                      ("is_multicast", "a multicast address"), ("is_unspecified", "the unspecified address"),
                      ("is_reserved", "a reserved address"), ("is_private", "a private address")):
        if getattr(address, test):
            return why
    if not address.is_global:
        return "an address that is not public"
    return None


def _system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise FetchFailed(f"{host} could not be resolved: {error}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class Guard:
    """The operator's allow-list and the resolver; :meth:`vet` gives the addresses to connect to."""

    allow: tuple[str, ...] = ()
    resolver: Resolver = field(default=_system_resolver, compare=False)

    @classmethod
    def of(cls, entries: Iterable[str], resolver: Resolver | None = None) -> Guard:
        checked = tuple(dict.fromkeys(allow_entry(e) for e in entries))
        return cls(checked, resolver or _system_resolver)

    def _networks(self) -> list[Network]:
        found = []
        for entry in self.allow:
            try:
                found.append(ipaddress.ip_network(entry))
            except ValueError:
                continue
        return found

    def vet(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, each allowed; :class:`UrlRefused` naming the first that is not."""
        name = host.lower().rstrip(".")
        try:
            literal: Address | None = ipaddress.ip_address(name.strip("[]"))
        except ValueError:
            literal = None
        addresses = [str(literal)] if literal is not None else self.resolver(name, port)
        if not addresses:
            raise FetchFailed(f"{host} resolved to no address")
        if literal is None and name in self.allow:
            return addresses
        networks = self._networks()
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            why = refused_because(address)
            if why and not any(address.version == n.version and address in n for n in networks):
                where = host if literal is not None else f"{host} resolves to {address}, which"
                raise UrlRefused(f"{where} is {why}; fetching it needs the operator's allow-list "
                                 "(--allow-host or CITEWELL_FETCH_ALLOW)")
        return addresses
