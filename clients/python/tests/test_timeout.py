"""Every wait of the client is bounded by its timeout (the commands'
--timeout), even against a store that answers at once but never moves
on: its Fetch replies never advance Through past From-1."""

import io
import time
import unittest

from umstore import Durable, Receiver
from umstore.__main__ import main
from umstore.receiver import ReadTimedOut

from .fakestore import FakeGroup


class NeverAdvancing(unittest.TestCase):
    def setUp(self):
        self.g1, self.g2 = FakeGroup(1), FakeGroup(2)
        self.addCleanup(self.g1.close)
        self.addCleanup(self.g2.close)
        self.g1.stuck = self.g2.stuck = True
        self.stores = ["--store", self.g1.addrs[0] + ":0:0", "--store", self.g2.addrs[0] + ":0:1"]

    def timed(self, f, bound):
        start = time.monotonic()
        out = f()
        took = time.monotonic() - start
        self.assertLess(took, bound, "took %.1fs" % took)
        return out

    def test_receive_gives_up_at_the_timeout(self):
        for extra in ([], ["--to", "5000000"], ["--name", "app1"]):
            with self.subTest(args=extra):
                out, err = io.StringIO(), io.StringIO()
                code = self.timed(lambda: main(["receive", *self.stores, "--source", "s", "--timeout", "1", *extra], out, err), 3.0)
                self.assertEqual(code, 1, err.getvalue())
                self.assertIn("--timeout", err.getvalue())

    def test_read_raises_its_timeout(self):
        r = Receiver("s", [self.g1.addrs, self.g2.addrs], timeout=0.5)
        self.addCleanup(r.close)

        def read():
            with self.assertRaises(ReadTimedOut) as cm:
                for _ in r.read(1, r.high()):
                    pass
            return cm.exception
        e = self.timed(read, 2.0)
        self.assertIn("gave up after 0.5s (--timeout)", str(e))

    def test_a_silent_store_costs_at_most_the_timeout(self):
        # A store that accepts the connection and never answers the
        # handshake: each call alone would wait 2 s per store and round
        # twice; the timeout bounds them together.
        import socket
        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen(16)
        self.addCleanup(ln.close)
        addr = "127.0.0.1:%d" % ln.getsockname()[1]
        d = Durable("s", "app1", [[addr, addr, addr]], timeout=0.5)
        self.addCleanup(d.close)
        self.timed(lambda: self.assertRaises(Exception, d.register), 1.5)


if __name__ == "__main__":
    unittest.main()
