"""A durable receiver: a receiver name registered with every group, whose
consumption the groups record, so that it resumes where it stopped
(docs/protocol.md section 11)."""

import logging
import os
import time

from . import wire
from .group import GroupClient, GroupUnreachable, TimedOut, left

log = logging.getLogger("umstore.durable")

CONSENSUS = ("majority", "lowest", "highest")

# Acknowledgements go to each group at most this often while the position
# moves; a keep-alive at least this often while it does not.
ACK_INTERVAL = 0.1
KEEPALIVE_INTERVAL = 3.0

# What close is given at least to record the last position, even once the
# timeout has passed.
CLOSE_GRACE = 0.5


class NameBusy(Exception):
    """Another live receiver holds the name."""


def decide(consensus, groups):
    """The position to resume after, from what each group said: groups is
    one (leader, stores) pair per group that answered, leader the
    ReceiverRegistered (or None), stores the (known, consumed) of each of
    its stores that answered a ReceiverQuery, and total its number of
    stores. Returns 0 when nothing was recorded."""
    if consensus == "lowest":
        known = [c for _, stores, _ in groups for k, c in stores if k]
        return min(known) if known else 0
    if consensus == "highest":
        all_ = [c for _, stores, _ in groups for _, c in stores]
        all_ += [m.consumed for m, _, _ in groups if m is not None]
        return max(all_, default=0)
    best = 0
    for leader, stores, total in groups:
        if leader is not None and leader.known:
            best = max(best, leader.consumed)
            continue
        majority = total // 2 + 1
        if len(stores) < majority:
            continue  # too few answered to know what a majority holds
        positions = sorted((c for _, c in stores), reverse=True)
        best = max(best, positions[majority - 1])
    return best


class Durable:
    """The registration and acknowledgements of the receiver name `name` of
    `source`, with its own connections (reading is never in their way).
    timeout (seconds, None for none) bounds everything it does from now on
    together (register, acknowledgements); set_timeout moves it."""

    def __init__(self, source, name, groups, *, token="", ssl_context=None, session=None, consensus="majority", paced=False,
                 timeout=None):
        wire.check_source_name(name)
        if consensus not in CONSENSUS:
            raise ValueError("consensus %r: want majority, lowest or highest" % consensus)
        self.source, self.name, self.paced = source, name, paced
        self.session = session or os.urandom(8).hex()
        self.consensus = consensus
        self.token, self.ssl_context = token, ssl_context
        self.groups = [GroupClient(i + 1, addrs, "python receiver " + name, token, ssl_context) for i, addrs in enumerate(groups)]
        self.position = 0  # the last sequence number consumed, as this receiver told
        self.told = [0] * len(groups)
        self.last_call = [0.0] * len(groups)
        self.registered = False  # some group registered the name
        self.set_timeout(timeout)

    def set_timeout(self, timeout):
        """Bound what the receiver name does from now on by timeout
        seconds (None: no bound beyond each call's own)."""
        self.deadline = None if timeout is None else time.monotonic() + timeout
        for g in self.groups:
            g.deadline = self.deadline

    def register(self):
        """Register with every group's leader, ask every store, and return
        the sequence number to resume at (0: no group recorded the name)."""
        answers, registered, busy = [], 0, None
        for g in self.groups:
            leader = None
            try:
                m = g.call(self._register_request())
                if isinstance(m, wire.ReceiverRegistered):
                    leader, registered = m, registered + 1
            except TimedOut:
                raise
            except wire.StoreError as e:
                if e.code == wire.CODE_SOURCE_BUSY:
                    busy = e
                log.info("group %d did not register %s: %s", g.index, self.name, e)
            except (GroupUnreachable, OSError, wire.ProtocolError) as e:
                log.info("group %d did not register %s: %s", g.index, self.name, e)
            answers.append((leader, self._query(g), len(g.addrs)))
        if busy is not None and registered == 0:
            raise NameBusy("receiver name %r is held by another live receiver: %s" % (self.name, busy.error.message))
        if registered == 0:
            raise GroupUnreachable("no group registered receiver %r" % self.name)
        self.registered = True
        consumed = decide(self.consensus, [a for a in answers if a[0] is not None or a[1]])
        self.position = consumed
        self.told = [consumed] * len(self.groups)
        return consumed + 1 if consumed else 0

    def _register_request(self):
        return wire.RegisterReceiver(source=self.source, receiver=self.name, session=self.session, paced=self.paced)

    def _query(self, g):
        out = []
        for addr in g.addrs:
            try:
                c, _ = wire.dial(addr, "python receiver " + self.name, self.token, self.ssl_context, left(self.deadline, 2.0))
            except (OSError, wire.ProtocolError, wire.StoreError):
                continue
            try:
                c.write(wire.ReceiverQuery(req_id=1, source=self.source, receiver=self.name))
                m = c.read(left(self.deadline, 2.0))
            except (OSError, wire.ProtocolError):
                m = None
            finally:
                c.close()
            if not isinstance(m, wire.ReceiverReport):
                continue
            known, consumed = False, 0
            for s in m.sources:
                if s.source == self.source:
                    known = True
                    consumed = max([r.consumed for r in s.receivers if r.name == self.name], default=0)
            out.append((known, consumed))
        return out

    def consumed(self, seq):
        """Record that every message up to seq was consumed; tell the
        groups at most every ACK_INTERVAL."""
        self.position = max(self.position, seq)
        self.tell(False)

    def tell(self, force, leaving=False):
        now = time.monotonic()
        for i, g in enumerate(self.groups):
            due = self.position > self.told[i] and now - self.last_call[i] >= ACK_INTERVAL
            if not (force or due or now - self.last_call[i] >= KEEPALIVE_INTERVAL):
                continue
            self.last_call[i] = now
            ack = wire.ConsumedAs(source=self.source, receiver=self.name, session=self.session, seq=self.position, leaving=leaving)
            try:
                try:
                    m = g.call(ack, timeout=5.0)
                except wire.StoreError as e:
                    if e.code != wire.CODE_NOT_REGISTERED:
                        raise
                    g.call(self._register_request())  # a new leader, or an expiry: register again
                    m = g.call(ack, timeout=5.0)
                if isinstance(m, wire.OK):
                    self.told[i] = self.position
            except wire.StoreError as e:
                log.warning("group %d refused the acknowledgement of %s: %s", g.index, self.name, e)
            except (GroupUnreachable, OSError, wire.ProtocolError) as e:
                log.info("group %d: acknowledgement of %s not recorded: %s", g.index, self.name, e)

    def close(self):
        """Record the last position with every group and free the name,
        within what is left of the timeout (at least CLOSE_GRACE
        seconds); nothing to record if no group registered the name."""
        if self.registered:
            rest = None if self.deadline is None else max(self.deadline - time.monotonic(), CLOSE_GRACE)
            self.set_timeout(rest)
            self.tell(True, leaving=True)
        for g in self.groups:
            g.close()
