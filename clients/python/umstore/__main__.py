"""python3 -m umstore publish|receive: the Python client's commands, in
the manner of umpub and umrcv.

  python3 -m umstore publish --deployment FILE --source NAME --count N --size B --json
  python3 -m umstore receive --deployment FILE --source NAME --json

publish prints a summary (with --json one JSON object on the last line,
with source, sent, stable, first_seq, last_seq, msgs_per_s, latency_us)
and exits 0 only if every message became stable within --timeout.
receive prints one message per line ({"seq":N,"payload":"<base64>"} with
--json) and exits 1 naming any range no reachable group holds.
Exit status 2 is bad usage.
"""

import argparse
import base64
import json
import logging
import math
import sys
import threading
import time

from . import deployment, wire
from .publisher import Publisher, PublisherError, RegistrationError
from .durable import CONSENSUS, Durable, NameBusy
from .group import GroupUnreachable
from .receiver import MissingError, Receiver, Unreachable


HELP = """usage: python3 -m umstore publish|receive --deployment FILE --source NAME [flags]

umstore's Python client, in the manner of umpub and umrcv.

commands:
  publish   publish generated messages to every store group; prints a
            summary (--json: one JSON object) and exits 0 only if every
            message became stable within --timeout
  receive   print a source's messages in sequence order (--from, --to,
            --follow, --group; --name for a durable receiver); exits 1
            naming any range no reachable group holds, or when --timeout
            passed first

common flags:
  --deployment FILE    the deployment file (umstored plan or dev wrote it)
  --store IP:port[:RegID[:GroupIDX]]
                       a store, as UM's ume_store (repeat; instead of
                       --deployment)
  --source NAME        the source
  --timeout SECONDS    give up after this long (default 60): every dial
                       and wait together; with receive --follow, what
                       comes before following
  --token-file, --tls-ca, --tls-cert, --tls-key
                       override the deployment's security section
  --json, --log-level  output

Exit status: 0 done, 1 failed (the reason on stderr), 2 bad usage.
python3 -m umstore COMMAND --help lists every flag of COMMAND.
"""


class Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that writes its help to out and its complaints
    to err (the streams main was given), not to sys.stdout/stderr."""

    def __init__(self, out, err, **kw):
        super().__init__(**kw)
        self._out, self._err = out, err

    def _print_message(self, message, file=None):
        if message:
            (self._err if file is sys.stderr else self._out).write(message)


def _common(p):
    p.add_argument("--deployment", metavar="FILE", help="deployment file (from umstored plan or umstored dev)")
    p.add_argument("--store", action="append", default=[], metavar="SPEC", help="a store as UM's ume_store, IP:port[:RegID[:GroupIDX]] (repeat; instead of --deployment)")
    p.add_argument("--source", required=True, help="source name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to give up after, every dial and wait together (default 60; with receive --follow, what comes before following)")
    p.add_argument("--token-file", metavar="FILE", help="the client token (default: the deployment's security.token-file)")
    p.add_argument("--tls-ca", metavar="FILE", help="verify the stores with this CA (default: the deployment's)")
    p.add_argument("--tls-cert", metavar="FILE", help="this client's certificate (for client-auth)")
    p.add_argument("--tls-key", metavar="FILE", help="its key")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])


def _stores(a):
    """(groups, reg_id, intergroup, token, ssl_context) from the flags."""
    if bool(a.deployment) == bool(a.store):
        raise Usage("give either --deployment FILE or --store IP:port[:RegID[:GroupIDX]]")
    try:
        wire.check_source_name(a.source)
    except ValueError as e:
        raise Usage("--source: %s" % e) from None
    if a.deployment:
        d = deployment.load(a.deployment)
        token = d.token(a.token_file)
        ctx = d.ssl_context(a.tls_ca, a.tls_cert, a.tls_key)
        return d.addrs(), 0, d.intergroup, token, ctx
    groups, reg = deployment.parse_stores(a.store)
    token = deployment.read_token(a.token_file) if a.token_file else ""
    ctx = deployment.make_ssl_context(a.tls_ca, a.tls_cert, a.tls_key) if a.tls_ca else None
    return groups, reg, "any", token, ctx


def generate(source, seq, size):
    """The payload umpub generates: it names its source and sequence
    number, padded with dots to exactly size bytes."""
    head = ("%s #%d " % (source, seq)).encode()
    return (head + b"." * size)[:size]


class _Latencies:
    """Latencies in constant memory: counts in buckets 1% wide."""

    def __init__(self):
        self.buckets = {}
        self.n = 0
        self.max = 0

    def add(self, us):
        us = max(us, 1)
        b = int(math.log(us) / math.log(1.01))
        self.buckets[b] = self.buckets.get(b, 0) + 1
        self.n += 1
        self.max = max(self.max, us)

    def pct(self, q):
        if not self.n:
            return 0
        rank = max(1, math.ceil(q * self.n))
        seen = 0
        for b in sorted(self.buckets):
            seen += self.buckets[b]
            if seen >= rank:
                return int(1.01 ** (b + 1))
        return int(self.max)


def publish(argv, out, err):
    p = _Parser(out, err, prog="python3 -m umstore publish", description="Publish generated messages to every store group.")
    _common(p)
    p.add_argument("--count", type=int, default=1, help="messages to send (default 1)")
    p.add_argument("--size", type=int, default=64, help="bytes per message (default 64)")
    p.add_argument("--rate", type=float, default=0, help="messages per second (0: as fast as stability allows)")
    p.add_argument("--intergroup", help="any, majority, all-active or all (default: the deployment's, else any)")
    p.add_argument("--intragroup", default="quorum", help="quorum, all-active or all: which stores of a group hold a message before the group confirms it (default quorum; the stores apply the deployment's if stricter)")
    p.add_argument("--flight-size", type=int, default=1000, help="unstable messages allowed in flight (default 1000)")
    p.add_argument("--session-id", help="register as this UM session ID (ume_session_id)")
    a = p.parse_args(argv)
    if a.count < 1 or not 0 <= a.size <= wire.MAX_PAYLOAD or a.rate < 0 or a.flight_size < 1 or a.timeout <= 0:
        raise Usage("--count >= 1, --size 0..%d, --rate >= 0, --flight-size >= 1, --timeout > 0" % wire.MAX_PAYLOAD)
    if a.intragroup not in wire.INTRAGROUP + ("all-stores",):
        raise Usage("--intragroup %r: want quorum, all-active or all" % a.intragroup)
    groups, reg, intergroup, token, ctx = _stores(a)
    sid = 0
    if a.session_id:
        try:
            sid = int(a.session_id, 0)
        except ValueError:
            raise Usage("--session-id %r is not a number" % a.session_id) from None
    deadline = time.monotonic() + a.timeout
    lat = _Latencies()
    sent_at = {}
    stable = [0]
    end = [0.0]
    lock = threading.Lock()

    def on_stable(first, last):
        now = time.monotonic()
        with lock:
            for s in range(first, last + 1):
                t = sent_at.pop(s, None)
                if t is not None:
                    lat.add(int((now - t) * 1e6))
                    stable[0] += 1
            end[0] = now

    pub = Publisher(a.source, groups, intergroup=a.intergroup or intergroup, flight_size=a.flight_size, token=token,
                    ssl_context=ctx, reg_id=reg, session_id=sid, timeout=a.timeout, on_stable=on_stable,
                    intragroup=a.intragroup)
    try:
        first = pub.first_seq
        start = time.monotonic()
        sent = 0
        for i in range(a.count):
            if a.rate:
                due = start + i / a.rate
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
            seq = pub.next_seq
            with lock:
                sent_at[seq] = time.monotonic()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                got = pub.send(generate(a.source, seq, a.size), timeout=left)
            except TimeoutError:
                with lock:
                    sent_at.pop(seq, None)
                break
            if got != seq:
                raise PublisherError("internal error: sent %d, expected %d" % (got, seq))
            sent += 1
        ok = pub.flush(max(0.0, deadline - time.monotonic()))
        if ok:
            pub.wait_all_groups(min(2.0, max(0.0, deadline - time.monotonic())))
        confirmed = pub.confirmed_per_group()
    finally:
        pub.close()
    with lock:
        n_stable = stable[0]
        el = end[0] - start if n_stable else 0.0
    summary = {
        "source": a.source, "sent": sent, "stable": n_stable,
        "first_seq": first if sent else 0, "last_seq": first + sent - 1 if sent else 0,
        "elapsed_s": el, "msgs_per_s": n_stable / el if el > 0 else 0.0,
        "latency_us": {"p50": lat.pct(0.5), "p90": lat.pct(0.9), "p99": lat.pct(0.99), "p999": lat.pct(0.999), "max": lat.max},
        "groups_confirmed": confirmed, "session": pub.session,
    }
    if a.json:
        out.write(json.dumps(summary) + "\n")
    else:
        out.write("source %s: sent %d, stable %d (sequence numbers %d-%d) in %.2fs: %.0f msgs/s\n" % (
            a.source, sent, n_stable, summary["first_seq"], summary["last_seq"], el, summary["msgs_per_s"]))
    if n_stable != sent or sent != a.count:
        err.write("python3 -m umstore publish: %d of %d messages stable when waiting ended\n" % (n_stable, a.count))
        return 1
    return 0


def receive(argv, out, err):
    p = _Parser(out, err, prog="python3 -m umstore receive", description="Print a source's messages in sequence order.")
    _common(p)
    p.add_argument("--from", dest="from_", default="oldest", help="a sequence number, oldest (default) or newest")
    p.add_argument("--to", type=int, default=0, help="last sequence number (default: the highest any group holds)")
    p.add_argument("--follow", action="store_true", help="then keep printing new messages until interrupted")
    p.add_argument("--group", type=int, default=0, help="read this group only (1-based)")
    p.add_argument("--name", default="", help="a durable receiver: register this receiver name, resume after what it consumed last time (unless --from is given) and record what is printed")
    p.add_argument("--consensus", default="majority", choices=list(CONSENSUS), help="with --name: how the groups' and stores' records decide where to resume (default majority)")
    a = p.parse_args(argv)
    if a.follow and a.to:
        raise Usage("--follow reads without end; drop --to")
    groups, reg, _, token, ctx = _stores(a)
    if reg:
        raise Usage("the store list gives RegID %d: receiving does not register, so give 0" % reg)
    if a.timeout <= 0:
        raise Usage("--timeout > 0")
    # --timeout bounds the whole read (registration, bounds, every chunk);
    # with --follow, everything before following.
    r = Receiver(a.source, groups, token=token, ssl_context=ctx, group=a.group, timeout=a.timeout)
    dur = None
    if a.name:
        if a.group:
            raise Usage("--name registers with every group; drop --group")
        try:
            dur = Durable(a.source, a.name, groups, token=token, ssl_context=ctx, consensus=a.consensus, timeout=a.timeout)
        except ValueError as e:
            raise Usage("--name: %s" % e) from None

    def show(seq, payload):
        if a.json:
            out.write(json.dumps({"seq": seq, "payload": base64.b64encode(payload).decode()}) + "\n")
        else:
            try:
                text = payload.decode()
                printable = all(c == "\t" or c.isprintable() for c in text)
            except UnicodeDecodeError:
                printable = False
            out.write("%d %s\n" % (seq, text if printable else "base64:" + base64.b64encode(payload).decode()))
    explicit = "--from" in argv or any(x.startswith("--from=") for x in argv)
    try:
        resume = dur.register() if dur else 0
        if resume and not explicit:
            first = resume
        elif a.from_ == "oldest":
            first = max(r.oldest(), 1)
        elif a.from_ == "newest":
            first = r.high() + 1
        else:
            try:
                first = int(a.from_)
            except ValueError:
                raise Usage("--from %r: want a sequence number, oldest or newest" % a.from_) from None
        if a.follow:
            r.set_timeout(None)
            if dur:
                dur.set_timeout(None)
            try:
                for seq, payload in r.follow(first, on_missing=lambda x, y: err.write("unrecoverable loss: messages %d-%d are held by no reachable group; skipped\n" % (x, y))):
                    show(seq, payload)
                    out.flush()
                    if dur:
                        dur.consumed(seq)
            except KeyboardInterrupt:
                return 0
        last = a.to or r.high()
        if last < first:
            return 0
        for seq, payload in r.read(first, last):
            show(seq, payload)
            if dur:
                out.flush()
                dur.consumed(seq)
    except MissingError as e:
        out.flush()
        if dur:
            dur.consumed(last)  # a position moves past what is lost, as the Go receiver's does
        err.write("python3 -m umstore receive: %s\n" % e)
        return 1
    except (Unreachable, NameBusy, GroupUnreachable) as e:
        err.write("python3 -m umstore receive: %s\n" % e)
        return 1
    finally:
        r.close()
        if dur:
            dur.close()
    return 0


def main(argv=None, out=sys.stdout, err=sys.stderr):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help", "help"):
        out.write(HELP)
        return 0
    if not argv or argv[0] not in ("publish", "receive"):
        err.write("usage: python3 -m umstore publish|receive --deployment FILE --source NAME [flags] (--help for more)\n")
        return 2
    cmd = {"publish": publish, "receive": receive}[argv[0]]
    try:
        args = argv[1:]
        level = "warning"
        if "--log-level" in args:
            level = args[args.index("--log-level") + 1]
        logging.basicConfig(level=getattr(logging, level.upper(), logging.WARNING), stream=err,
                            format="%(levelname)s %(name)s: %(message)s")
        return cmd(args, out, err)
    except Usage as e:
        err.write("python3 -m umstore %s: %s\n" % (argv[0], e))
        return 2
    except deployment.DeploymentError as e:
        err.write("python3 -m umstore %s: %s\n" % (argv[0], e))
        return 2
    except (RegistrationError, PublisherError, wire.StoreError, OSError) as e:
        err.write("python3 -m umstore %s: %s\n" % (argv[0], e))
        return 1
    except SystemExit as e:  # argparse
        return e.code if isinstance(e.code, int) else 2


if __name__ == "__main__":
    sys.exit(main())
