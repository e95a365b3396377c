"""The golden frames of testdata/protocol/frames.txt, shared with the Go
implementation (wire/golden_test.go): every frame encodes to exactly the
bytes given and decodes back; the frames of other versions decode as
given; the frames to refuse are refused."""

import json
import os
import unittest

from umstore import wire

FRAMES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "testdata", "protocol", "frames.txt")


def cases(path):
    """Read a cockroachdb/datadriven file: a command line with arguments,
    input lines, "----", expected lines, a blank line."""
    with open(path) as f:
        lines = f.read().split("\n")
    i, out = 0, []
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            i += 1
            continue
        where = "%s:%d" % (os.path.basename(path), i + 1)
        parts = line.split()
        cmd, args = parts[0], dict(p.split("=", 1) for p in parts[1:])
        i += 1
        inp = []
        while lines[i] != "----":
            inp.append(lines[i])
            i += 1
        i += 1
        exp = []
        while i < len(lines) and lines[i].strip():
            exp.append(lines[i])
            i += 1
        out.append((where, cmd, args, "\n".join(inp), "\n".join(exp)))
    return out


def unhex(text):
    return bytes.fromhex("".join(text.split()))


def normalized(obj):
    """JSON with nil lists as empty ones (the protocol does not tell them
    apart)."""
    if isinstance(obj, dict):
        return {k: normalized([] if v is None else v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [normalized(x) for x in obj]
    return obj


class GoldenFrames(unittest.TestCase):
    def test_frames(self):
        all_cases = cases(FRAMES)
        self.assertGreater(len(all_cases), 30)
        kinds = set()
        for where, cmd, args, inp, exp in all_cases:
            with self.subTest(where=where, cmd=cmd, type=args.get("type")):
                if cmd == "encode":
                    kinds.add(args["type"])
                    m = wire.from_json(args["type"], json.loads(inp))
                    frame = wire.encode(m)
                    self.assertEqual(frame.hex(), unhex(exp).hex(), "encoding differs from the golden frame")
                    back = wire.decode(frame[4:])
                    self.assertEqual(normalized(wire.to_json(back)), normalized(json.loads(inp)))
                elif cmd == "decode":
                    frame = unhex(inp)
                    self.assertEqual(int.from_bytes(frame[:4], "big"), len(frame) - 4)
                    m = wire.decode(frame[4:])
                    self.assertEqual(type(m).__name__, args["type"])
                    self.assertEqual(normalized(wire.to_json(m)), normalized(json.loads(exp)))
                elif cmd == "decode-error":
                    frame = unhex(inp)
                    want = {"unknown-type": wire.UnknownTypeError, "malformed": wire.MalformedError}[exp.strip()]
                    with self.assertRaises(want):
                        wire.decode(frame[4:])
                else:
                    self.fail("unknown command " + cmd)
        # Every frame type has a golden frame.
        self.assertEqual(kinds, {st.name for st in wire.FRAMES.values()})


if __name__ == "__main__":
    unittest.main()
