"""Reading a source back from whichever group holds each message
(docs/protocol.md section 8)."""

import logging
import queue
import threading
import time

from . import wire
from .group import GroupClient, GroupUnreachable, TimedOut

log = logging.getLogger("umstore.receiver")

ALL = (1 << 64) - 1

# A subscription silent this long is taken as dead (the store sends a
# heartbeat every second).
SUBSCRIPTION_SILENCE = 5.0


class MissingError(Exception):
    """Some sequence numbers are held by no reachable group. ranges lists
    them as (first, last)."""

    def __init__(self, ranges):
        self.ranges = ranges
        super().__init__("messages held by no reachable store group: " + ", ".join(
            str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges))


class Unreachable(Exception):
    """No group could be asked."""


class ReadTimedOut(Unreachable):
    """The time allowed (timeout, the command's --timeout) ran out."""


def _holes(first, through, seqs):
    out, nxt = [], first
    for s in seqs:
        if s > nxt:
            out.append((nxt, s - 1))
        nxt = s + 1
    if nxt <= through:
        out.append((nxt, through))
    return out


class Receiver:
    """Reads one source. group, if not 0, reads that group only (1-based).
    timeout (seconds, None for none) bounds everything the receiver does
    from now on together, every dial, answer awaited and chunk read: past
    it, a call raises ReadTimedOut. follow runs without it."""

    def __init__(self, source, groups, *, token="", ssl_context=None, group=0, fetch_count=1000, fetch_bytes=1 << 20, name="",
                 timeout=None):
        wire.check_source_name(source)
        if not groups:
            raise ValueError("no store groups given")
        if not 0 <= group <= len(groups):
            raise ValueError("group %d does not exist (there are %d)" % (group, len(groups)))
        self.source, self.name = source, name
        self.fetch_count, self.fetch_bytes = fetch_count, fetch_bytes
        self.token, self.ssl_context = token, ssl_context
        self.groups = [GroupClient(i + 1, addrs, "python receiver " + source, token, ssl_context)
                       for i, addrs in enumerate(groups) if group in (0, i + 1)]
        self.primary = 0
        self.set_timeout(timeout)

    def set_timeout(self, timeout):
        """Bound what the receiver does from now on by timeout seconds
        (None: no bound beyond each call's own)."""
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.timeout = timeout
        for g in self.groups:
            g.deadline = self.deadline

    def _check_deadline(self, what):
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ReadTimedOut("gave up after %.1fs (--timeout): %s" % (self.timeout, what))

    def close(self):
        for g in self.groups:
            g.close()

    def _fetch(self, g, first, last):
        m = g.call(wire.Fetch(source=self.source, from_=first, to=last, max_count=self.fetch_count, max_bytes=self.fetch_bytes))
        if isinstance(m, wire.Error):
            raise wire.StoreError(m)
        if not isinstance(m, wire.FetchReply):
            raise wire.MalformedError("a Fetch was answered with %s" % type(m).__name__)
        return m

    def _bounds(self):
        out, last = [], None
        for g in self.groups:
            try:
                out.append(self._fetch(g, ALL, ALL))
            except TimedOut:
                self._check_deadline("asking the groups for the source's bounds")
                raise
            except (GroupUnreachable, OSError, wire.ProtocolError, wire.StoreError) as e:
                last = e
        if not out:
            raise Unreachable("no store group reachable: %s" % last)
        return out

    def high(self):
        """The highest sequence number any reachable group holds (0: none)."""
        return max(r.high_seq for r in self._bounds())

    def oldest(self):
        """The oldest sequence number any reachable group holds (0: none)."""
        lows = [r.low_seq for r in self._bounds() if r.low_seq]
        return min(lows) if lows else 0

    def read(self, first, last):
        """Yield (seq, payload) for every message in [first, last], in
        order, each once. Ranges no reachable group holds are skipped and
        raised as MissingError once everything else was yielded."""
        first = max(first, 1)
        missing = []
        nxt = first
        while nxt <= last:
            self._check_deadline("read %d-%d, not yet %d-%d" % (first, nxt - 1, nxt, last) if nxt > first else "nothing read of %d-%d" % (first, last))
            try:
                through, msgs, holes = self._chunk(nxt, last)
            except TimedOut:
                self._check_deadline("read %d-%d, not yet %d-%d" % (first, nxt - 1, nxt, last) if nxt > first else "nothing read of %d-%d" % (first, last))
                raise
            for seq in sorted(msgs):
                yield seq, msgs[seq]
            for h in holes:
                if missing and missing[-1][1] + 1 == h[0]:
                    missing[-1] = (missing[-1][0], h[1])
                else:
                    missing.append(h)
            if through >= last:
                break
            nxt = through + 1
        if missing:
            raise MissingError(missing)

    def _chunk(self, first, last):
        err = None
        for i in range(len(self.groups)):
            gi = (self.primary + i) % len(self.groups)
            try:
                rep = self._fetch(self.groups[gi], first, last)
            except TimedOut:
                raise
            except (GroupUnreachable, OSError, wire.ProtocolError, wire.StoreError) as e:
                err = e
                continue
            self.primary = gi
            through = max(min(rep.through, last), first)
            msgs = {m.seq: m.payload for m in rep.msgs if first <= m.seq <= through and wire.intact(m)}
            holes = _holes(first, through, sorted(msgs))
            for j in range(1, len(self.groups)):
                if not holes:
                    break
                other = self.groups[(gi + j) % len(self.groups)]
                for a, b in holes:
                    try:
                        r = self._fetch(other, a, b)
                    except TimedOut:
                        raise
                    except (GroupUnreachable, OSError, wire.ProtocolError, wire.StoreError):
                        break
                    for m in r.msgs:
                        if a <= m.seq <= b and m.seq not in msgs and wire.intact(m):
                            msgs[m.seq] = m.payload
                    if a <= r.through < b:
                        # cut short: this chunk ends where that reply ends
                        through = r.through
                        msgs = {s: p for s, p in msgs.items() if s <= through}
                        break
                holes = _holes(first, through, sorted(msgs))
            return through, msgs, holes
        raise Unreachable("no store group reachable: %s" % err)

    def follow(self, first, on_missing=None, stop=None):
        """Yield (seq, payload) from first on, in order and each once, as
        the groups commit them, until stop (a threading.Event) is set. A
        range every connected group has passed without holding it is
        reported to on_missing(first, last) and skipped, once every group
        is connected (a group that is down may hold it)."""
        stop = stop or threading.Event()
        first = max(first, 1)
        events = queue.Queue(256)
        state = {"next": first}
        threads = [threading.Thread(target=self._subscribe, args=(i, state, events, stop), daemon=True) for i in range(len(self.groups))]
        for t in threads:
            t.start()
        pending = {}
        through = [0] * len(self.groups)
        connected = [False] * len(self.groups)
        nxt = first
        try:
            while not stop.is_set():
                try:
                    kind, gi, d = events.get(timeout=0.5)
                    if kind == "down":
                        connected[gi] = False
                    else:
                        connected[gi] = True
                        for m in d.msgs:
                            if m.seq >= nxt and wire.intact(m):
                                pending.setdefault(m.seq, m.payload)
                        through[gi] = max(through[gi], d.through)
                except queue.Empty:
                    pass
                while True:
                    while nxt in pending:
                        yield nxt, pending.pop(nxt)
                        nxt += 1
                    state["next"] = nxt
                    if not all(connected) or min(through) < nxt:
                        break
                    end = min(through)
                    if pending:
                        end = min(end, min(pending) - 1)
                    if end < nxt:
                        break
                    if on_missing:
                        on_missing(nxt, end)
                    nxt = end + 1
        finally:
            stop.set()

    def _subscribe(self, gi, state, events, stop):
        base = self.groups[gi]
        g = GroupClient(base.index, base.addrs, base.client, self.token, self.ssl_context)
        while not stop.is_set():
            conn = None
            try:
                conn, m = g.open(wire.Subscribe(req_id=1, source=self.source, from_=state["next"], receiver=self.name),
                                 wire.Deliver, timeout=SUBSCRIPTION_SILENCE, next_on_error=lambda e: True)
                while not stop.is_set():
                    if isinstance(m, wire.Deliver):
                        events.put(("deliver", gi, m))
                    elif isinstance(m, wire.NotLeader):
                        g.redirected(m)
                        break
                    elif isinstance(m, wire.Error):
                        break
                    m = conn.read(SUBSCRIPTION_SILENCE)
                    if m is None:
                        break
            except (GroupUnreachable, OSError, wire.ProtocolError, wire.StoreError) as e:
                log.debug("subscription to group %d: %s", gi + 1, e)
            finally:
                if conn:
                    conn.close()
            if not stop.is_set():
                events.put(("down", gi, None))
                time.sleep(0.2)
