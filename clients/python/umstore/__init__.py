"""A Python client for umstore, written from docs/protocol.md.

    from umstore import deployment, Publisher, Receiver

    d = deployment.load("umstore-dev/deployment.yaml")
    p = Publisher("orders", d.addrs(), token=d.token(), ssl_context=d.ssl_context())
    seq = p.send(b"hello")
    p.flush(timeout=10)
    p.close()

    r = Receiver("orders", d.addrs(), token=d.token(), ssl_context=d.ssl_context())
    for seq, payload in r.read(1, r.high()):
        print(seq, payload)

Standard library plus python3-msgpack.
"""

from . import deployment, wire
from .durable import Durable, NameBusy
from .group import GroupClient, GroupUnreachable
from .publisher import Closed, FlightFull, Publisher, PublisherError, RegistrationError, SourceBusy
from .receiver import MissingError, Receiver, Unreachable

__all__ = ["deployment", "wire", "Durable", "NameBusy", "GroupClient", "GroupUnreachable", "Publisher", "PublisherError", "RegistrationError",
           "SourceBusy", "FlightFull", "Closed", "Receiver", "MissingError", "Unreachable"]
