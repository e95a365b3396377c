"""CRC32C as the stores and the Go SDKs compute it (docs/protocol.md)."""

import unittest

from umstore import wire


class Checksum(unittest.TestCase):
    def test_known_values(self):
        # The check value of CRC-32C, and the golden Publish frame's.
        self.assertEqual(wire.crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(wire.crc32c(b"hello"), 2591144780)
        self.assertEqual(wire.crc32c(b""), 0)

    def test_intact(self):
        good = wire.Msg.cls(seq=1, payload=b"hello", crc=2591144780)
        bad = wire.Msg.cls(seq=1, payload=b"hellp", crc=2591144780)
        unknown = wire.Msg.cls(seq=1, payload=b"anything", crc=0)
        self.assertTrue(wire.intact(good))
        self.assertFalse(wire.intact(bad))
        self.assertTrue(wire.intact(unknown))


if __name__ == "__main__":
    unittest.main()
