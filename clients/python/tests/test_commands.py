"""python3 -m umstore publish and receive against stand-in groups."""

import base64
import io
import json
import unittest

from umstore.__main__ import generate, main

from .fakestore import FakeGroup


class Commands(unittest.TestCase):
    def setUp(self):
        self.g1, self.g2 = FakeGroup(1), FakeGroup(2)
        self.addCleanup(self.g1.close)
        self.addCleanup(self.g2.close)
        self.stores = ["--store", self.g1.addrs[0] + ":0:0", "--store", self.g1.addrs[1] + ":0:0",
                       "--store", self.g2.addrs[0] + ":0:1"]

    def run_cmd(self, *args):
        out, err = io.StringIO(), io.StringIO()
        code = main(list(args), out, err)
        return code, out.getvalue(), err.getvalue()

    def test_publish_then_receive(self):
        code, out, err = self.run_cmd("publish", *self.stores, "--source", "py", "--count", "25", "--size", "20", "--json")
        self.assertEqual(code, 0, err)
        summary = json.loads(out.strip().split("\n")[-1])
        self.assertEqual((summary["sent"], summary["stable"], summary["first_seq"], summary["last_seq"]), (25, 25, 1, 25))
        code, out, err = self.run_cmd("receive", *self.stores, "--source", "py", "--json")
        self.assertEqual(code, 0, err)
        lines = [json.loads(x) for x in out.strip().split("\n")]
        self.assertEqual([x["seq"] for x in lines], list(range(1, 26)))
        self.assertEqual(base64.b64decode(lines[6]["payload"]), generate("py", 7, 20))
        self.assertEqual(generate("py", 7, 20), b"py #7 ..............")

    def test_missing_range_exits_1(self):
        self.g1.msgs["gap"] = {1: b"a", 3: b"c"}
        code, out, err = self.run_cmd("receive", *self.stores, "--source", "gap", "--json")
        self.assertEqual(code, 1)
        self.assertIn("held by no reachable store group: 2", err)
        self.assertEqual(len(out.strip().split("\n")), 2)

    def test_help(self):
        # Before, --help printed one line and exited 2.
        for args in (["--help"], ["-h"], ["help"]):
            with self.subTest(args=args):
                code, out, err = self.run_cmd(*args)
                self.assertEqual(code, 0, err)
                for want in ("publish", "receive", "--deployment", "--store", "--timeout", "Exit status"):
                    self.assertIn(want, out)
        code, out, _ = self.run_cmd("receive", "--help")
        self.assertEqual(code, 0)
        self.assertIn("--follow", out)

    def test_usage(self):
        for args, want in [
            (("publish", "--source", "s"), "either --deployment"),
            (("publish", "--store", "127.0.0.1:1:abc", "--source", "s"), "numbers"),
            (("publish", "--store", "127.0.0.1:1:1:0", "--store", "127.0.0.1:2:2:1", "--source", "s"), "RegIDs"),
            (("receive", "--store", "127.0.0.1:1:5", "--source", "s"), "RegID 5"),
            (("publish", *self.stores, "--source", "bad\x1bname"), "unprintable"),
            (("frobnicate",), "usage"),
        ]:
            with self.subTest(args=args):
                code, _, err = self.run_cmd(*args)
                self.assertEqual(code, 2, err)
                self.assertIn(want, err)


if __name__ == "__main__":
    unittest.main()
