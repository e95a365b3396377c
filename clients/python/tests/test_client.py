"""The publisher and receiver against stand-in groups (tests/fakestore.py):
registration and resume, flight size, following leaders with resends,
reading ranges with holes filled from another group, following."""

import threading
import time
import unittest

from umstore import Publisher, Receiver, wire
from umstore.publisher import FlightFull, IntragroupUnsupported, session_for
from umstore.receiver import MissingError

from .fakestore import FakeGroup


def eventually(cond, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.g1, self.g2 = FakeGroup(1), FakeGroup(2)
        self.addCleanup(self.g1.close)
        self.addCleanup(self.g2.close)

    def addrs(self):
        return [self.g1.addrs, self.g2.addrs]

    def publisher(self, **kw):
        kw.setdefault("register_timeout", 1.0)
        p = Publisher("orders", self.addrs(), **kw)
        self.addCleanup(p.close)
        return p

    def test_publish_resume_and_read(self):
        self.g1.msgs["orders"] = {s: b"old %d" % s for s in range(1, 42)}
        stable = []
        p = self.publisher(on_stable=lambda a, b: stable.append((a, b)))
        self.assertEqual(p.first_seq, 42)
        for i in range(42, 142):
            self.assertEqual(p.send(b"m %d" % i), i)
        self.assertTrue(p.flush(10))
        self.assertTrue(p.wait_all_groups(10))
        # stability reported in order, each number once
        self.assertEqual(stable[0][0], 42)
        self.assertEqual(stable[-1][1], 141)
        for (a, b), (c, _) in zip(stable, stable[1:]):
            self.assertEqual(c, b + 1)
        self.assertEqual(p.confirmed_per_group(), [141, 141])
        p.close()
        # group 2 lacks 1..41: the receiver fills them from group 1
        r = Receiver("orders", self.addrs())
        self.addCleanup(r.close)
        got = list(r.read(1, r.high()))
        self.assertEqual([s for s, _ in got], list(range(1, 142)))
        self.assertEqual(got[0][1], b"old 1")
        self.assertEqual(got[-1][1], b"m 141")
        self.assertEqual(r.oldest(), 1)

    def test_leader_change_resends(self):
        p = self.publisher(flight_size=20)
        for i in range(1, 51):
            p.send(b"%d" % i)
        self.assertTrue(p.flush(10))
        self.g1.silent = True
        for i in range(51, 61):
            p.send(b"%d" % i)
        eventually(lambda: p.stable >= 60, what="group 2 alone makes 51-60 stable (any)")
        self.g1.silent = False
        self.g1.set_leader(2)  # the connection drops; the publisher finds G1S3 and resends
        self.assertTrue(p.wait_all_groups(10))
        self.assertEqual(sorted(self.g1.msgs["orders"]), list(range(1, 61)))
        self.assertGreater(p.stats["resends"], 0)

    def test_flight_size(self):
        self.g1.silent = self.g2.silent = True
        p = self.publisher(flight_size=3, flight="refuse")
        for i in range(3):
            p.send(b"x")
        with self.assertRaises(FlightFull):
            p.send(b"x")
        q = Publisher("other", self.addrs(), flight_size=2, register_timeout=1.0)
        self.addCleanup(q.close)
        q.send(b"a")
        q.send(b"b")
        with self.assertRaises(TimeoutError):
            q.send(b"c", timeout=0.3)
        self.g1.silent = False
        self.g1.set_leader(0)  # reconnect: the unacknowledged messages are resent
        self.assertEqual(q.send(b"c", timeout=10), 3)

    def test_intergroup_all_waits_for_both(self):
        self.g2.silent = True
        p = self.publisher(intergroup="all-groups")
        p.send(b"x")
        self.assertFalse(p.flush(0.5))
        self.g2.silent = False
        self.g2.set_leader(1)
        self.assertTrue(p.flush(10))

    def test_intragroup_asked_and_applied(self):
        p = self.publisher(intragroup="all")
        p.send(b"x")
        self.assertTrue(p.flush(10))
        self.assertEqual((self.g1.asked["orders"], self.g2.asked["orders"]), ("all", "all"))

    def test_intragroup_refused_by_older_stores(self):
        # Stores older than the option would apply quorum: registration
        # fails rather than get less than asked.
        self.g1.intragroup_supported = self.g2.intragroup_supported = False
        with self.assertRaises(IntragroupUnsupported):
            Publisher("orders", self.addrs(), intragroup="all-active", register_timeout=0.5, timeout=2.0)

    def test_held_back_is_not_silence(self):
        # A leader holding an Ack back (intragroup all with a store down)
        # says so every 0.2 s: the publisher waits instead of taking the
        # silence past ack_timeout for a frozen leader.
        self.g1.hold = self.g2.hold = 1.5
        p = self.publisher(ack_timeout=0.6)
        p.send(b"x")
        self.assertTrue(p.flush(10))
        self.assertEqual(p.stats["reconnects"], 0)

    def test_missing_ranges(self):
        self.g1.msgs["s"] = {1: b"a", 2: b"b", 5: b"e"}
        self.g2.msgs["s"] = {3: b"c"}
        r = Receiver("s", self.addrs())
        self.addCleanup(r.close)
        got = []
        with self.assertRaises(MissingError) as cm:
            for m in r.read(1, 6):
                got.append(m)
        self.assertEqual([s for s, _ in got], [1, 2, 3, 5])
        self.assertEqual(cm.exception.ranges, [(4, 4), (6, 6)])

    def test_follow(self):
        stop = threading.Event()
        r = Receiver("live", self.addrs())
        self.addCleanup(r.close)
        got = []

        def follow():
            for seq, payload in r.follow(1, stop=stop):
                got.append((seq, payload))
                if len(got) == 20:
                    stop.set()
        t = threading.Thread(target=follow, daemon=True)
        t.start()
        p = Publisher("live", self.addrs(), register_timeout=1.0)
        self.addCleanup(p.close)
        for i in range(1, 21):
            p.send(b"%d" % i)
        t.join(15)
        self.assertEqual([s for s, _ in got], list(range(1, 21)))
        self.assertEqual(got[4][1], b"5")

    def test_token_refused(self):
        g = FakeGroup(3, token="right")
        self.addCleanup(g.close)
        with self.assertRaises(wire.Unauthorized):
            wire.dial(g.addrs[0], token="wrong")
        c, w = wire.dial(g.addrs[0], token="right")
        self.assertEqual(w.store, "G3S1")
        c.close()

    def test_refusal_arrives_at_once(self):
        # Every group refusing the registration for good (a request the
        # stores refuse, a version, a permission) ends it at once with the
        # stores' words, not at the time-out (issue 28 case 1, the Python
        # client's half). Before, only a refused token and a forbidden
        # identity did; the rest waited out the 30 s time-out.
        for code in (wire.CODE_BAD_REQUEST, wire.CODE_VERSION, wire.CODE_FORBIDDEN):
            with self.subTest(code=code):
                self.g1.refuse = self.g2.refuse = (code, "the stores refuse this: do something else")
                start = time.monotonic()
                with self.assertRaises(wire.StoreError) as cm:
                    self.publisher(timeout=30.0, register_timeout=5.0)
                took = time.monotonic() - start
                self.assertEqual(cm.exception.code, code)
                self.assertIn("do something else", str(cm.exception))
                self.assertLess(took, 2.0, "refused after %.1fs" % took)

    def test_sessions(self):
        self.assertEqual(session_for(reg_id=1000), "regid:1000")
        self.assertEqual(session_for(session_id=255), "session-id:0x00000000000000ff")
        self.assertEqual(len(session_for()), 16)
        with self.assertRaises(ValueError):
            session_for(reg_id=1, session_id=2)
        p = self.publisher(reg_id=7)
        self.assertEqual(self.g1.owner["orders"], "regid:7")
        p.close()


if __name__ == "__main__":
    unittest.main()
