"""Publishing to every store group (docs/protocol.md section 7)."""

import logging
import os
import secrets
import select
import threading
import time

from . import wire
from .group import GroupClient, GroupUnreachable

log = logging.getLogger("umstore.publisher")

BEHAVIOURS = {"any": "any", "any-group": "any", "majority": "majority",
              "all-active": "all-active", "all": "all", "all-groups": "all"}

# How long close waits for every group's sender to tell its group the
# source is free, all groups together.
CLOSE_WAIT = 2.0


def _final_refusal(answer):
    """Whether a group's answer is a refusal every store gives alike and
    no retry changes: the token, the client identity's permission, a
    request the stores refuse (bad-request, version), a TLS certificate."""
    return isinstance(answer, wire.TLSRefused) or (isinstance(answer, wire.StoreError) and answer.code in wire.FINAL_CODES)


class PublisherError(Exception):
    """Base of the publisher's errors."""


class RegistrationError(PublisherError):
    """Too few groups answered the registration in time."""


class SourceBusy(RegistrationError):
    """Another live publisher holds the source."""


class IntragroupUnsupported(RegistrationError):
    """A group does not apply the intragroup behaviour asked for (its
    stores are older than it): no retry changes that."""


class FlightFull(PublisherError):
    """flight="refuse" and flight_size messages are unstable."""


class Closed(PublisherError):
    """The publisher is closed."""


def session_for(session=None, reg_id=0, session_id=0):
    """The session a publisher registers as (docs/protocol.md section 7)."""
    given = [x for x in (session, reg_id, session_id) if x]
    if len(given) > 1:
        raise ValueError("give at most one of session, reg_id and session_id")
    if session:
        return session
    if reg_id:
        if not 0 < reg_id < 1 << 32:
            raise ValueError("a RegID is 1..4294967295")
        return "regid:%d" % reg_id
    if session_id:
        if not 0 < session_id <= 0xFFFFFFFFFFFFFFFE:
            raise ValueError("a session ID is 1..0xFFFFFFFFFFFFFFFE")
        return "session-id:0x%016x" % session_id
    return secrets.token_hex(8)


def needed(behaviour, configured, active):
    """How many groups must hold a message for it to be stable."""
    if behaviour == "majority":
        return configured // 2 + 1
    if behaviour == "all-active":
        return active
    if behaviour == "all":
        return configured
    return 1


class _Ranges:
    """Sequence numbers a group is done with, as sorted disjoint ranges."""

    def __init__(self, through):
        self.r = [[0, through]]

    def add(self, a, b):
        r = self.r
        r.append([a, b])
        r.sort()
        out = [r[0]]
        for x in r[1:]:
            if x[0] <= out[-1][1] + 1:
                out[-1][1] = max(out[-1][1], x[1])
            else:
                out.append(x)
        self.r = out

    def contiguous(self):
        return self.r[0][1] if self.r[0][0] == 0 else 0

    def has(self, seq):
        return any(a <= seq <= b for a, b in self.r)


class Publisher:
    """Publishes the messages of one source to every group.

    Constructing one registers with every group (waiting up to
    register_timeout for all of them, then until enough answered for the
    intergroup behaviour, within timeout) and resumes past the highest
    sequence number any answering group holds. send() assigns sequence
    numbers; on_stable(first, last) is called in order as messages become
    stable. Thread-safe."""

    def __init__(self, source, groups, *, intergroup="any", flight_size=1000, flight="block",
                 token="", ssl_context=None, session=None, reg_id=0, session_id=0,
                 register_timeout=5.0, timeout=30.0, keepalive_interval=3.0, ack_timeout=10.0,
                 reconnect_delay=0.2, max_batch=512, max_batch_bytes=512 << 10,
                 retention_size_limit=24 << 20, on_stable=None, on_unstable=None, intragroup="quorum"):
        wire.check_source_name(source)
        if intergroup not in BEHAVIOURS:
            raise ValueError("intergroup %r: want any, majority, all-active or all" % intergroup)
        intragroup = {"all-stores": "all"}.get(intragroup, intragroup)
        if intragroup not in wire.INTRAGROUP:
            raise ValueError("intragroup %r: want quorum, all-active or all" % intragroup)
        self.intragroup = intragroup
        if flight not in ("block", "refuse"):
            raise ValueError("flight %r: want block or refuse" % flight)
        if not groups or any(not g for g in groups):
            raise ValueError("every group needs at least one store address")
        if flight_size < 1:
            raise ValueError("flight_size must be at least 1")
        self.source = source
        self.behaviour = BEHAVIOURS[intergroup]
        self.flight_size, self.flight = flight_size, flight
        self.session = session_for(session, reg_id, session_id)
        self.keepalive_interval, self.ack_timeout = keepalive_interval, ack_timeout
        self.reconnect_delay = reconnect_delay
        self.max_batch, self.max_batch_bytes = max_batch, max_batch_bytes
        self.retention_size_limit = retention_size_limit
        self.on_stable, self.on_unstable = on_stable, on_unstable
        self.cv = threading.Condition()
        self.closed = False
        self.decided = False
        self.answers = {}  # group -> Registered, or an exception for busy/unauthorized
        self.first_seq = self.next_seq = 0
        self.stable = self.delivered = 0
        self.retained = []  # payloads of retained_first.. from index _head
        self._head = 0
        self.retained_first = 0
        self.retained_bytes = 0
        self.done = []  # per group: _Ranges confirmed (or lost)
        self.confirmed = []  # per group: _Ranges confirmed
        self.active = [False] * len(groups)
        self.stats = {"resends": 0, "reconnects": 0, "lost": 0, "conflicts": 0, "forced_releases": 0}
        self._deliver_lock = threading.Lock()
        self._intragroup_warned = set()
        self._wakes = [os.pipe() for _ in groups]
        self._conns = [None] * len(groups)
        self.groups = [GroupClient(i + 1, addrs, "python publisher " + source, token, ssl_context) for i, addrs in enumerate(groups)]
        self.threads = [threading.Thread(target=self._run, args=(g,), daemon=True, name="umstore-group-%d" % (g + 1)) for g in range(len(groups))]
        for t in self.threads:
            t.start()
        try:
            self._register(register_timeout, timeout)
        except BaseException:
            self.close()
            raise

    # --- registration

    def _register(self, register_timeout, timeout):
        n = len(self.groups)
        start = time.monotonic()
        with self.cv:
            while True:
                answered = [g for g, a in self.answers.items() if isinstance(a, wire.Registered)]
                waited = time.monotonic() - start
                if len(answered) == n or (waited >= register_timeout and len(answered) >= max(1, needed(self.behaviour, n, len(answered)))):
                    break
                final = [a for a in self.answers.values() if _final_refusal(a)]
                if final and len(final) == n:
                    raise final[0]  # every group refused this client: no wait changes that
                if waited >= timeout:
                    busy = [a for a in self.answers.values() if isinstance(a, SourceBusy)]
                    if busy:
                        raise busy[0]
                    refused = [a for a in self.answers.values() if isinstance(a, IntragroupUnsupported) or _final_refusal(a)]
                    if refused:
                        raise refused[0]
                    raise RegistrationError("registration incomplete: %d of %d store groups answered within %.1fs" % (len(answered), n, timeout))
                left = (register_timeout if waited < register_timeout else timeout) - waited
                self.cv.wait(max(0.01, min(left, 0.2)))
            high = max(self.answers[g].high_seq for g in answered)
            if high >= wire.MAX_SEQ:
                raise PublisherError("the source has used every sequence number (%d); publish under a new source name" % wire.MAX_SEQ)
            self.first_seq = self.next_seq = high + 1
            self.stable = self.delivered = high
            self.retained_first = self.first_seq
            self.done = [_Ranges(high) for _ in range(n)]
            self.confirmed = [_Ranges(high) for _ in range(n)]
            self.decided = True
            self.cv.notify_all()
        log.info("registered %s: resume at %d (%d of %d groups answered)", self.source, self.first_seq, len(answered), n)

    # --- sending

    def send(self, payload, timeout=None):
        """Give payload the next sequence number and hand it to every group;
        returns the sequence number. Blocks while flight_size messages are
        unstable (flight="block"), or raises FlightFull ("refuse")."""
        payload = bytes(payload)
        if len(payload) > wire.MAX_PAYLOAD:
            raise PublisherError("payload of %d bytes; the limit is %d" % (len(payload), wire.MAX_PAYLOAD))
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cv:
            while True:
                if self.closed:
                    raise Closed("publisher closed")
                if self.next_seq > wire.MAX_SEQ:
                    raise PublisherError("the source has used every sequence number")
                if self.next_seq - 1 - self.stable < self.flight_size:
                    break
                if self.flight == "refuse":
                    raise FlightFull("flight size reached: %d unstable messages" % self.flight_size)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("the flight stayed full")
                self.cv.wait(left)
            seq = self.next_seq
            self.next_seq += 1
            self.retained.append(payload)
            self.retained_bytes += len(payload)
        self._wake_all()
        return seq

    def _wake_all(self):
        for _, w in self._wakes:
            try:
                os.write(w, b"x")
            except (BlockingIOError, OSError):
                pass

    def flush(self, timeout=None):
        """Wait until every message sent is stable and on_stable was told."""
        return self._wait_for(lambda: self.delivered >= self.next_seq - 1, timeout)

    def wait_all_groups(self, timeout=None):
        """Wait until every group confirmed every message sent."""
        return self._wait_for(lambda: all(c.contiguous() >= self.next_seq - 1 for c in self.done), timeout)

    def _wait_for(self, cond, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cv:
            while not cond():
                if self.closed:
                    raise Closed("publisher closed")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.cv.wait(left if left is not None else 1.0)
        return True

    def confirmed_per_group(self):
        with self.cv:
            return [c.contiguous() for c in self.confirmed]

    def close(self):
        """Stop, telling each group the source is free, within CLOSE_WAIT
        seconds for all groups together. Unstable messages are abandoned:
        flush first."""
        with self.cv:
            if self.closed:
                return
            self.closed = True
            self.cv.notify_all()
        self._wake_all()
        deadline = time.monotonic() + CLOSE_WAIT
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        for r, w in self._wakes:
            os.close(r)
            os.close(w)

    # --- stability

    def _confirm(self, g, first, last):
        with self.cv:
            if not self.decided:
                return
            self.confirmed[g].add(first, last)
            self.done[g].add(first, last)
            self._advance_locked()
        self._deliver()

    def _advance_locked(self):
        n = len(self.groups)
        counted = [c.contiguous() for i, c in enumerate(self.confirmed) if self.behaviour != "all-active" or self.active[i]]
        need = needed(self.behaviour, n, len(counted))
        if need > 0 and len(counted) >= need:
            w = sorted(counted, reverse=True)[need - 1]
            if w > self.stable:
                self.stable = min(w, self.next_seq - 1)
        # Release what every group is done with, and, over the limit, the
        # oldest stable messages.
        while self._head < len(self.retained) and self.retained_first <= self.stable:
            seq = self.retained_first
            if not all(d.has(seq) for d in self.done):
                if self.retained_bytes <= self.retention_size_limit:
                    break
                self.stats["forced_releases"] += 1
            self.retained_bytes -= len(self.retained[self._head])
            self.retained[self._head] = None
            self._head += 1
            self.retained_first += 1
        if self._head > 1024 and self._head * 2 > len(self.retained):
            del self.retained[:self._head]
            self._head = 0
        self.cv.notify_all()

    def _deliver(self):
        with self._deliver_lock:
            with self.cv:
                first, last = self.delivered + 1, self.stable
            if last < first:
                return
            if self.on_stable:
                self.on_stable(first, last)
            with self.cv:
                self.delivered = max(self.delivered, last)
                self.cv.notify_all()

    # --- one group

    def _run(self, g):
        gc = self.groups[g]
        connected_before = False
        while True:
            with self.cv:
                if self.closed:
                    return
            req = wire.Register(req_id=1, source=self.source, session=self.session)
            if self.intragroup != "quorum":
                req = wire.RegisterSource(req_id=1, source=self.source, session=self.session, intragroup=self.intragroup)
            try:
                conn, reg = gc.open(req, wire.Registered, timeout=10.0, next_on_error=lambda e: e.code != wire.CODE_SOURCE_BUSY and e.code not in wire.FINAL_CODES)
                applied = reg.intragroup if reg.intragroup in wire.INTRAGROUP else "quorum"
                if wire.INTRAGROUP.index(applied) < wire.INTRAGROUP.index(self.intragroup):
                    conn.close()
                    raise IntragroupUnsupported("group %d applies intragroup %s, this publisher asks for %s: upgrade its stores" % (g + 1, applied, self.intragroup))
            except IntragroupUnsupported as e:
                with self.cv:
                    if not self.decided:
                        self.answers.setdefault(g, e)
                        self.cv.notify_all()
                if g not in self._intragroup_warned:
                    self._intragroup_warned.add(g)
                    log.error("%s", e)
                self._pause()
                continue
            except wire.TLSRefused as e:
                with self.cv:
                    if not self.decided:
                        self.answers.setdefault(g, e)
                        self.cv.notify_all()
                self._pause()
                continue
            except wire.StoreError as e:
                err = SourceBusy(str(e)) if e.code == wire.CODE_SOURCE_BUSY else e
                with self.cv:
                    if not self.decided:
                        self.answers.setdefault(g, err)
                        self.cv.notify_all()
                self._pause()
                continue
            except (GroupUnreachable, OSError, wire.ProtocolError) as e:
                log.debug("group %d unreachable: %s", g + 1, e)
                self._pause()
                continue
            with self.cv:
                if not self.decided:
                    prev = self.answers.get(g)
                    if isinstance(prev, wire.Registered):
                        reg.high_seq = max(reg.high_seq, prev.high_seq)
                    self.answers[g] = reg
                    self.cv.notify_all()
                elif reg.high_seq >= self.first_seq and self.confirmed[g].contiguous() < self.first_seq:
                    log.error("group %d answered late with sequence number %d, beyond the resume point %d: they may have been reused", g + 1, reg.high_seq, self.first_seq)
                while not self.decided and not self.closed:
                    self.cv.wait(0.2)
                self.active[g] = True
                self._conns[g] = conn
            try:
                self._stream(g, conn, connected_before)
            except (OSError, wire.ProtocolError, wire.StoreError, _Redirect, TimeoutError) as e:
                with self.cv:
                    closed = self.closed
                if not closed:
                    log.info("connection to group %d lost; reconnecting: %s", g + 1, e)
            finally:
                with self.cv:
                    self.active[g] = False
                    self._conns[g] = None
                    if self.behaviour == "all-active":
                        self._advance_locked()
                self._deliver()
                conn.close()
            connected_before = True
            self._pause()

    def _pause(self):
        with self.cv:
            if not self.closed:
                self.cv.wait(self.reconnect_delay)

    def _stream(self, g, conn, again):
        r, _ = self._wakes[g]
        with self.cv:
            nxt = max(self.done[g].contiguous() + 1, self.retained_first)
            if again and nxt < self.next_seq:
                self.stats["resends"] += self.next_seq - nxt
                self.stats["reconnects"] += 1
        req = 1
        outstanding = 0
        last_ack = last_send = time.monotonic()
        while True:
            with self.cv:
                if self.closed:
                    try:
                        conn.write(wire.KeepAlive(source=self.source, session=self.session, leaving=True))
                    except OSError:
                        pass
                    return
                nxt = max(nxt, self.retained_first)
                while self.done[g].has(nxt) and nxt < self.next_seq:
                    nxt += 1
                first, payloads, size = nxt, [], 0
                if outstanding < 32:
                    while nxt < self.next_seq and len(payloads) < self.max_batch and size < self.max_batch_bytes:
                        p = self.retained[self._head + nxt - self.retained_first]
                        if payloads and size + len(p) + 5 * (len(payloads) + 1) > wire.MAX_PAYLOAD:
                            break
                        payloads.append(p)
                        size += len(p)
                        nxt += 1
            now = time.monotonic()
            if payloads:
                req += 1
                conn.write(wire.Publish(req_id=req, source=self.source, first_seq=first, payloads=payloads,
                                         checksums=[wire.crc32c(p) for p in payloads]))
                outstanding += 1
                last_send = now
                timeout = 0
            else:
                if outstanding and now - last_ack > self.ack_timeout:
                    raise TimeoutError("group %d acknowledged nothing for %.0fs: finding its leader again" % (g + 1, self.ack_timeout))
                if now - last_send >= self.keepalive_interval:
                    conn.write(wire.KeepAlive(source=self.source, session=self.session, leaving=False))
                    last_send = now
                timeout = min(self.keepalive_interval, 0.5)
                if not conn.has_frame():
                    ready, _, _ = select.select([conn.sock, r], [], [], timeout)
                    if r in ready:
                        os.read(r, 4096)
                timeout = 0
            while True:
                try:
                    m = conn.read(timeout)
                except (wire.MalformedError, wire.UnknownTypeError) as e:
                    log.warning("unreadable frame from group %d ignored: %s", g + 1, e)
                    continue
                if m is None:
                    break
                if isinstance(m, wire.Ack):
                    outstanding = max(0, outstanding - 1)
                    last_ack = time.monotonic()
                    if m.conflicts:
                        self.stats["conflicts"] += m.conflicts
                        log.error("group %d holds different payloads for sequence numbers %d-%d: they were reused", g + 1, m.first_seq, m.last_seq)
                    self._confirm(g, m.first_seq, m.last_seq)
                elif isinstance(m, wire.Nak):
                    outstanding = max(0, outstanding - 1)
                    last_ack = time.monotonic()
                    self._naked(g, m)
                elif isinstance(m, wire.HeldBack):
                    # The leader holds acknowledgements (or frames) back on
                    # purpose, and says why: it is alive.
                    last_ack = time.monotonic()
                    log.info("group %d holds this publisher back: %s", g + 1, m.reason)
                elif isinstance(m, wire.NotLeader):
                    self.groups[g].redirected(m)
                    raise _Redirect("leadership of group %d moved to %r" % (g + 1, m.leader_name))
                elif isinstance(m, wire.Error):
                    raise wire.StoreError(m)

    def _naked(self, g, m):
        nxt = m.first_seq
        lost = []
        for rg in m.lost:
            a, b = max(rg.from_, m.first_seq), min(rg.to, m.last_seq)
            if a > b or a < nxt:
                continue
            if a > nxt:
                self._confirm(g, nxt, a - 1)
            lost.append((a, b))
            nxt = b + 1
        if nxt <= m.last_seq:
            self._confirm(g, nxt, m.last_seq)
        with self.cv:
            for a, b in lost:
                self.done[g].add(a, b)
                self.stats["lost"] += b - a + 1
            self._advance_locked()
        for a, b in lost:
            log.warning("group %d says it lost messages %d-%d", g + 1, a, b)
            if self.on_unstable:
                self.on_unstable(g + 1, a, b)


class _Redirect(Exception):
    pass
