"""Following the leader of one store group (docs/protocol.md section 9)."""

import time

from . import wire

# How long to wait after a NotLeader that names no leader (an election).
ELECTION_PAUSE = 0.1


class GroupUnreachable(Exception):
    """No store of the group answered as its leader."""


class TimedOut(GroupUnreachable):
    """The time allowed (the commands' --timeout) ran out before the group
    answered."""


def left(deadline, bound):
    """bound, cut to what remains before deadline (a time.monotonic(), or
    None for none). Raises TimedOut once the deadline has passed."""
    if deadline is None:
        return bound
    rest = deadline - time.monotonic()
    if rest <= 0:
        raise TimedOut("gave up: the time allowed (--timeout) has passed")
    return rest if bound is None else min(bound, rest)


class GroupClient:
    """Finds and follows the leader of one group. Not for concurrent use,
    except hint and redirected."""

    def __init__(self, index, addrs, client="python", token="", ssl_context=None, dial_timeout=2.0, deadline=None):
        self.index = index  # 1-based, for messages
        # deadline (a time.monotonic(), or None) bounds every dial, wait
        # and pause of open and call together: past it they raise TimedOut.
        self.deadline = deadline
        self.addrs = list(addrs)
        self.client = client
        self.token = token
        self.ssl_context = ssl_context
        self.dial_timeout = dial_timeout
        self.hint = ""  # the store that last answered as leader, or that a redirect named
        self._kept = None  # (Conn, addr) kept by call
        self._req = 0

    def redirected(self, m):
        """Record a NotLeader received in the middle of a session."""
        self.hint = m.leader

    def _order(self):
        out = [self.hint] if self.hint else []
        return out + [a for a in self.addrs if a not in out]

    def _dial(self, addr):
        c, _ = wire.dial(addr, self.client, self.token, self.ssl_context, self._left(self.dial_timeout))
        return c

    def _left(self, bound):
        try:
            return left(self.deadline, bound)
        except TimedOut:
            raise TimedOut("group %d: gave up: the time allowed (--timeout) has passed" % self.index) from None

    def open(self, req, reply_type=None, timeout=10.0, next_on_error=None):
        """Send req to the leader (following redirects, each store tried
        once) and return (conn, answer) with the first answer that is not
        a redirect. The connection is the caller's. A store's Error ends
        the search (raised as StoreError) unless next_on_error(error) says
        to try the next store."""
        conn, m = self._ask(req, timeout, reply_type, next_on_error, patient=False, kept=None)
        return conn, m

    def call(self, req, timeout=10.0):
        """Send req (its req_id set here) to the leader and return the
        answer, keeping the connection for the next call. Goes round the
        stores twice, pausing during elections."""
        conn, m = self._ask(req, timeout, None, None, patient=True, kept=self._kept)
        self._kept = (conn, self.hint)
        return m

    def close(self):
        if self._kept:
            self._kept[0].close()
            self._kept = None

    def _ask(self, req, timeout, reply_type, next_on_error, patient, kept):
        order = self._order()
        last = None
        conn, addr = kept if kept else (None, None)
        for _ in range(2 * len(self.addrs) + 2):
            if conn is None:
                if not order:
                    if not patient:
                        break
                    order = list(self.addrs)
                addr = order.pop(0)
                try:
                    conn = self._dial(addr)
                except (wire.Unauthorized, wire.TLSRefused):
                    raise  # every store of a deployment checks the same token and certificates
                except (OSError, wire.ProtocolError, wire.StoreError) as e:
                    last = e
                    continue
            if patient:
                self._req += 1
                req.req_id = self._req
            try:
                wait = self._left(timeout)
                conn.write(req)
                m = conn.read(wait)
                if m is None:
                    raise TimeoutError("store %s did not answer within %.1fs" % (addr, wait))
            except (OSError, wire.ProtocolError) as e:
                last = e
                conn.close()
                conn = None
                continue
            if isinstance(m, wire.NotLeader):
                last = GroupUnreachable("store %s is not the leader of group %d" % (addr, self.index))
                conn.close()
                conn = None
                if m.leader and m.leader != addr:
                    order = [m.leader] + [a for a in order if a != m.leader]
                    continue
                if patient:
                    time.sleep(self._left(ELECTION_PAUSE))
                continue
            if isinstance(m, wire.Error):
                conn.close()
                conn = None
                err = wire.Unauthorized(m) if m.code == wire.CODE_UNAUTHORIZED else wire.StoreError(m)
                if next_on_error is None or not next_on_error(m):
                    raise err
                last = err
                continue
            if reply_type is not None and not isinstance(m, reply_type):
                conn.close()
                conn = None
                last = wire.MalformedError("store %s answered %s with %s" % (addr, type(req).__name__, type(m).__name__))
                continue
            self.hint = addr
            return conn, m
        raise GroupUnreachable("group %d: no leader reachable: %s" % (self.index, last))
