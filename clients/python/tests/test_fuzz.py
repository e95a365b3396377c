"""The decoder fuzzed as the Go one is (wire/fuzz_test.go): mutations of
the shared golden frames (testdata/protocol/frames.txt) are decoded, and
the decoder must raise only its own error (wire.ProtocolError), never
hang or raise anything else; whatever it accepts must encode again. A
stream of mutated frames read through a Conn must end in the protocol's
errors or a closed connection. Bounded: a fixed number of cases from a
seed (UMSTORE_FUZZ_SEED to replay one; UMSTORE_FUZZ_CASES for more)."""

import os
import random
import signal
import socket
import threading
import time
import unittest

from umstore import wire

from .test_golden import FRAMES, cases, unhex

# Bytes that mean much to msgpack: nil, false/true, the headers of bin,
# str, array and map with 8/16/32-bit lengths, ext, floats, fixarray and
# fixmap headers, negative fixints.
INTERESTING = [0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6,
               0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcf, 0xd3, 0xd4, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde,
               0xdf, 0xe0, 0xff]


def golden_bodies():
    """Every golden frame's body (without its length prefix)."""
    out = []
    for _, cmd, _, inp, exp in cases(FRAMES):
        frame = unhex(exp if cmd == "encode" else inp)
        if len(frame) > 4:
            out.append(frame[4:])
    return out


def mutate(rng, body, others):
    b = bytearray(body)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and b:  # flip a bit
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:  # an interesting byte
            b[rng.randrange(len(b))] = rng.choice(INTERESTING)
        elif op == 2 and b:  # truncate
            del b[rng.randrange(len(b)):]
        elif op == 3:  # insert random bytes
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 4 and len(b) > 1:  # duplicate a piece
            i = rng.randrange(len(b))
            j = rng.randrange(i, len(b))
            b[j:j] = b[i:j + 1]
        elif op == 5:  # splice with another frame
            o = rng.choice(others)
            i, j = rng.randrange(len(b) + 1), rng.randrange(len(o) + 1)
            b = b[:i] + bytearray(o[j:])
        elif op == 6 and len(b) > 1:  # the type byte of another frame
            b[0] = rng.choice(list(wire.FRAMES))
    return bytes(b)


class Guard:
    """Fails the test, from the main thread, if a block runs longer than
    seconds (a decoder that hangs)."""

    def __init__(self, seconds, what):
        self.seconds, self.what = seconds, what

    def __enter__(self):
        def fire(*_):
            raise AssertionError("%s: still running after %ss" % (self.what(), self.seconds))
        self.old = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)


class DecoderFuzz(unittest.TestCase):
    def setUp(self):
        self.seed = int(os.environ.get("UMSTORE_FUZZ_SEED", "0")) or random.randrange(1 << 32)
        self.n = int(os.environ.get("UMSTORE_FUZZ_CASES", "5000"))
        self.bodies = golden_bodies()
        self.assertGreater(len(self.bodies), 30)

    def test_decode_raises_only_its_own_error(self):
        rng = random.Random(self.seed)
        body = b""
        accepted = refused = 0
        start = time.monotonic()
        with Guard(20, lambda: "seed %d, decoding %s" % (self.seed, body.hex())):
            for _ in range(self.n):
                body = mutate(rng, rng.choice(self.bodies), self.bodies)
                t0 = time.monotonic()
                try:
                    m = wire.decode(body)
                except wire.ProtocolError:
                    refused += 1
                    continue
                except Exception as e:  # noqa: BLE001 -- what the test is for
                    self.fail("seed %d: decoding %s raised %s: %s (UMSTORE_FUZZ_SEED=%d replays it)" % (
                        self.seed, body.hex(), type(e).__name__, e, self.seed))
                finally:
                    took = time.monotonic() - t0
                    self.assertLess(took, 0.5, "seed %d: decoding %s took %.2fs" % (self.seed, body.hex(), took))
                accepted += 1
                try:
                    wire.encode(m)
                except Exception as e:  # noqa: BLE001
                    self.fail("seed %d: decoded %s from %s but cannot encode it: %s: %s" % (
                        self.seed, m, body.hex(), type(e).__name__, e))
        self.assertGreater(refused, 0)
        self.assertGreater(accepted, 0)
        self.assertLess(time.monotonic() - start, 20)

    def test_conn_read_ends_in_protocol_errors(self):
        rng = random.Random(self.seed + 1)
        for k in range(max(1, self.n // 30)):
            stream = b"".join(
                len(b).to_bytes(4, "big") + b for b in (mutate(rng, rng.choice(self.bodies), self.bodies) for _ in range(rng.randint(1, 6))))
            if rng.random() < 0.3:  # and damage the framing itself
                stream = mutate(rng, stream, self.bodies)
            a, b = socket.socketpair()

            def send(a=a, stream=stream):
                try:
                    a.sendall(stream)
                except OSError:
                    pass  # the reader stopped at a frame too large
                finally:
                    a.close()
            threading.Thread(target=send, daemon=True).start()
            c = wire.Conn(b, max_frame=4096)
            with Guard(5, lambda: "seed %d, stream %d" % (self.seed, k)):
                for _ in range(1000):
                    try:
                        m = c.read(1.0)
                    except (wire.FrameTooLargeError, ConnectionError):
                        break  # the stream cannot go on
                    except wire.ProtocolError:
                        continue  # the next frame
                    except Exception as e:  # noqa: BLE001
                        self.fail("seed %d: stream %d: read raised %s: %s" % (self.seed, k, type(e).__name__, e))
                    if m is None:
                        self.fail("seed %d: stream %d: a closed stream read as silence" % (self.seed, k))
            c.close()


if __name__ == "__main__":
    unittest.main()
