"""A stand-in for a store group, speaking the protocol on loopback: enough
of a store to drive the client's publisher and receiver through leader
changes, silence and refusals. Not a store: no raft, no durability."""

import socket
import threading
import time

from umstore import wire


class FakeGroup:
    """A group of `size` stores on 127.0.0.1; store `leader` leads."""

    def __init__(self, index, size=3, token=""):
        self.index, self.token = index, token
        self.lock = threading.Condition()
        self.msgs = {}  # source -> {seq: payload}
        self.owner = {}  # source -> session
        self.leader = 0
        self.silent = False  # acknowledge nothing
        self.hold = 0.0  # seconds each Ack is held back, with HeldBack notices meanwhile
        self.intragroup_supported = True  # False: a store older than Registered.Intragroup
        self.refuse = None  # (code, message): every Register is answered with that Error
        # stuck: the group claims messages up to stuck_high but every Fetch
        # of a range answers at once with nothing and a Through that never
        # advances (From-1), and every subscription a heartbeat that never
        # advances either.
        self.stuck, self.stuck_high = False, 10 ** 12
        self.asked = {}  # source -> the intragroup behaviour RegisterSource asked for
        self.conns = set()
        self.listeners = []
        self.addrs = []
        for i in range(size):
            ln = socket.socket()
            ln.bind(("127.0.0.1", 0))
            ln.listen(16)
            self.listeners.append(ln)
            self.addrs.append("127.0.0.1:%d" % ln.getsockname()[1])
            threading.Thread(target=self._accept, args=(i, ln), daemon=True).start()

    def set_leader(self, i):
        """Move leadership to store i and cut every connection."""
        with self.lock:
            self.leader = i
            for c in list(self.conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.lock.notify_all()

    def close(self):
        for ln in self.listeners:
            ln.close()
        self.set_leader(self.leader)

    def _accept(self, i, ln):
        while True:
            try:
                s, _ = ln.accept()
            except OSError:
                return
            with self.lock:
                self.conns.add(s)
            threading.Thread(target=self._serve, args=(i, s), daemon=True).start()

    def _serve(self, i, s):
        c = wire.Conn(s)
        try:
            m = c.read(10)
            if not isinstance(m, wire.Hello):
                return
            if self.token and m.token != self.token:
                c.write(wire.Error(code=wire.CODE_UNAUTHORIZED, message="token"))
                return
            c.write(wire.Welcome(version=1, store="G%dS%d" % (self.index, i + 1), group=self.index))
            registered = {}
            while True:
                m = c.read(None)
                with self.lock:
                    leads = self.leader == i
                    leader = self.addrs[self.leader]
                if isinstance(m, wire.KeepAlive):
                    continue
                if not leads:
                    c.write(wire.NotLeader(req_id=getattr(m, "req_id", 0), leader=leader, leader_name="G%dS%d" % (self.index, self.leader + 1)))
                    continue
                if isinstance(m, (wire.Register, wire.RegisterSource)) and self.refuse:
                    c.write(wire.Error(req_id=m.req_id, code=self.refuse[0], message=self.refuse[1]))
                    continue
                if isinstance(m, (wire.Register, wire.RegisterSource)):
                    asked = getattr(m, "intragroup", "") or "quorum"
                    with self.lock:
                        held = self.msgs.setdefault(m.source, {})
                        self.owner[m.source] = m.session
                        self.asked[m.source] = asked
                    registered[m.source] = m.session
                    c.write(wire.Registered(req_id=m.req_id, source=m.source, group=self.index, group_id="g%d" % self.index,
                                            high_seq=max(held, default=0), low_seq=min(held, default=0),
                                            intragroup=asked if self.intragroup_supported else ""))
                elif isinstance(m, wire.Publish):
                    if m.source not in registered:
                        c.write(wire.Error(req_id=m.req_id, code=wire.CODE_NOT_REGISTERED, message="register first"))
                        continue
                    with self.lock:
                        if self.silent:
                            continue
                        held = self.msgs[m.source]
                        for k, p in enumerate(m.payloads):
                            held.setdefault(m.first_seq + k, p)
                        self.lock.notify_all()
                        high = max(held)
                    last = m.first_seq + len(m.payloads) - 1
                    deadline = time.monotonic() + self.hold
                    while time.monotonic() < deadline:
                        c.write(wire.HeldBack(source=m.source, reason="intragroup all: a store is down"))
                        time.sleep(0.2)
                    c.write(wire.Ack(req_id=m.req_id, source=m.source, first_seq=m.first_seq, last_seq=last, high_seq=high))
                elif isinstance(m, wire.Fetch) and self.stuck:
                    rep = wire.FetchReply(req_id=m.req_id, source=m.source, known=True, high_seq=self.stuck_high, low_seq=1,
                                          through=m.to if m.from_ == m.to == (1 << 64) - 1 else m.from_ - 1)
                    c.write(rep)
                elif isinstance(m, wire.Fetch):
                    with self.lock:
                        held = dict(self.msgs.get(m.source, {}))
                    rep = wire.FetchReply(req_id=m.req_id, source=m.source, known=m.source in self.msgs)
                    if held:
                        rep.high_seq, rep.low_seq = max(held), min(held)
                    rep.through = m.to
                    seqs = sorted(s for s in held if m.from_ <= s <= min(m.to, rep.high_seq))[:m.max_count or 1000]
                    rep.msgs = [wire.Msg.cls(seq=s, payload=held[s]) for s in seqs]
                    if seqs and seqs[-1] < min(m.to, rep.high_seq):
                        rep.through = seqs[-1]
                    c.write(rep)
                elif isinstance(m, wire.Subscribe):
                    self._push(c, m, i)
                    return
        except (OSError, wire.ProtocolError, ConnectionError):
            pass
        finally:
            with self.lock:
                self.conns.discard(s)
            s.close()

    def _push(self, c, m, i):
        cursor = max(m.from_, 1)
        while True:
            with self.lock:
                if self.leader != i:
                    c.write(wire.NotLeader(req_id=m.req_id, leader=self.addrs[self.leader]))
                    return
                held = self.msgs.get(m.source, {})
                high = max(held, default=0)
                new = [s for s in sorted(held) if s >= cursor]
                if not new:
                    self.lock.wait(0.5)
                    held = self.msgs.get(m.source, {})
                    if not [s for s in held if s >= cursor]:
                        c.write(wire.Deliver(req_id=m.req_id, source=m.source, through=cursor - 1, high_seq=high))
                        continue
                    continue
                msgs = [wire.Msg.cls(seq=s, payload=held[s]) for s in new]
            c.write(wire.Deliver(req_id=m.req_id, source=m.source, through=high, high_seq=high, msgs=msgs))
            cursor = high + 1
