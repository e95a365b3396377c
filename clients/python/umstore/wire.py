"""The umstore client protocol: frames, their encoding, and connections.

Written from docs/protocol.md. A frame is a 4-byte big-endian length, a
type byte and a msgpack array of the message's fields. Decoding follows
the protocol's evolution rule: fields past the ones known are ignored,
missing fields (and nil) are zero. Encoding writes the bytes the Go
implementation writes (u64 fields as msgpack uint64, 0xcf), so that the
golden frames of testdata/protocol/frames.txt match byte for byte.
"""

import keyword
import re
import socket
import ssl
import struct
import time

import msgpack

VERSION = 1

# The largest frame a peer may send (the length field), and the largest
# payload of one message.
MAX_FRAME = 16 << 20
MAX_PAYLOAD = MAX_FRAME - (64 << 10)
MAX_SEQ = (1 << 53) - 1
MAX_SOURCE_NAME = 255

# Error codes (docs/protocol.md section 6).
CODE_BAD_REQUEST = "bad-request"
CODE_VERSION = "version"
CODE_TOO_LARGE = "too-large"
CODE_UNAVAILABLE = "unavailable"
CODE_UNKNOWN_TYPE = "unknown-type"
CODE_INTERNAL = "internal"
CODE_UNAUTHORIZED = "unauthorized"
CODE_SOURCE_BUSY = "source-busy"
CODE_FORBIDDEN = "forbidden"  # the client's identity may not (docs/security.md); every store says the same
CODE_NOT_REGISTERED = "not-registered"
CODE_CHECKSUM = "checksum"


class ProtocolError(Exception):
    """A frame could not be read."""


class MalformedError(ProtocolError):
    """The frame's body does not decode as its type says; the stream is
    still positioned at the next frame."""


class UnknownTypeError(ProtocolError):
    """The frame's type is not one this client knows; the stream is still
    positioned at the next frame."""


class FrameTooLargeError(ProtocolError):
    """The peer announced a frame over the maximum size: the stream cannot
    be resynchronised."""


class StoreError(Exception):
    """A store answered a request with an Error frame."""

    def __init__(self, err):
        super().__init__("store error (%s): %s" % (err.code, err.message))
        self.error = err
        self.code = err.code


class Unauthorized(StoreError):
    """The store refused the client's token."""


class TLSRefused(OSError):
    """The TLS handshake failed over a certificate: the store refused the
    client's (or wanted one), or the client does not trust the store's.
    Every store of a deployment answers alike: no retry changes it."""


# Error codes every store of a deployment answers alike, which no retry
# changes: a client gives up on them at once.
FINAL_CODES = (CODE_UNAUTHORIZED, CODE_FORBIDDEN, CODE_BAD_REQUEST, CODE_VERSION)


U64, U32, I64, INT, STR, BIN, BOOL = "u64", "u32", "i64", "int", "str", "bin", "bool"

_ZERO = {U64: 0, U32: 0, I64: 0, INT: 0, STR: "", BIN: b"", BOOL: False}


def _snake(name):
    s = re.sub(r"ID$", "Id", name)
    # An acronym is one word: CRC -> crc, not c_r_c.
    s = re.sub(r"([A-Z]+)([A-Z][a-z]|$)", lambda m: m.group(1).capitalize() + m.group(2), s)
    s = re.sub(r"(?<!^)(?=[A-Z])", "_", s).lower()
    return s + "_" if keyword.iskeyword(s) else s


class Struct:
    """The layout of one message: its name, type number (for frames) and
    fields in order, each (protocol name, kind) where kind is a scalar
    kind, a Struct, or a one-element list [kind] for an array."""

    def __init__(self, name, fields, type_=None):
        self.name = name
        self.type = type_
        self.fields = [(n, _snake(n), k) for n, k in fields]
        self.cls = _make_class(self)

    def __repr__(self):
        return "Struct(%s)" % self.name


def _zero(kind):
    if isinstance(kind, list):
        return []
    if isinstance(kind, Struct):
        return kind.cls()
    return _ZERO[kind]


def _make_class(st):
    names = [snake for _, snake, _ in st.fields]

    def __init__(self, **kw):
        for _, snake, kind in st.fields:
            setattr(self, snake, kw.pop(snake, None) if snake in kw else _zero(kind))
        if kw:
            raise TypeError("%s has no field %s" % (st.name, ", ".join(kw)))

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, n) == getattr(other, n) for n in names)

    def __repr__(self):
        return "%s(%s)" % (st.name, ", ".join("%s=%r" % (n, getattr(self, n)) for n in names))

    return type(st.name, (), {"__slots__": names, "__init__": __init__, "__eq__": __eq__,
                              "__repr__": __repr__, "STRUCT": st, "TYPE": st.type})


Msg = Struct("Msg", [("Seq", U64), ("Payload", BIN), ("CRC", U32)])
Range = Struct("Range", [("From", U64), ("To", U64)])
GroupIdentity = Struct("GroupIdentity", [("Index", INT), ("GroupID", STR)])
SourceState = Struct("SourceState", [("Name", STR), ("HighSeq", U64), ("LowSeq", U64), ("Count", U64), ("Gaps", [Range]),
                                      ("Released", U64), ("Unpublished", [Range]), ("Conflicts", U64)])

FRAMES = {}


def _frame(type_, name, fields):
    st = Struct(name, fields, type_)
    FRAMES[type_] = st
    return st.cls


Hello = _frame(1, "Hello", [("Version", INT), ("Client", STR), ("Token", STR)])
Welcome = _frame(2, "Welcome", [("Version", INT), ("Store", STR), ("Group", INT)])
Error = _frame(3, "Error", [("ReqID", U64), ("Code", STR), ("Message", STR)])
Register = _frame(4, "Register", [("ReqID", U64), ("Source", STR), ("Session", STR)])
Registered = _frame(5, "Registered", [("ReqID", U64), ("Source", STR), ("Group", INT), ("GroupID", STR), ("HighSeq", U64), ("LowSeq", U64), ("Intragroup", STR)])
Publish = _frame(6, "Publish", [("ReqID", U64), ("Source", STR), ("FirstSeq", U64), ("Payloads", [BIN]), ("Checksums", [U32]),
                                ("UnusedFrom", U64), ("UnusedTo", U64)])
Ack = _frame(7, "Ack", [("ReqID", U64), ("Source", STR), ("FirstSeq", U64), ("LastSeq", U64), ("HighSeq", U64), ("Conflicts", INT)])
NotLeader = _frame(8, "NotLeader", [("ReqID", U64), ("Leader", STR), ("LeaderName", STR), ("NoLeaderMS", U64)])
Fetch = _frame(9, "Fetch", [("ReqID", U64), ("Source", STR), ("From", U64), ("To", U64), ("MaxCount", INT), ("MaxBytes", INT), ("Local", BOOL)])
FetchReply = _frame(10, "FetchReply", [("ReqID", U64), ("Source", STR), ("Known", BOOL), ("HighSeq", U64), ("LowSeq", U64), ("Through", U64), ("Msgs", [Msg]),
                                       ("Released", U64), ("Unpublished", [Range])])
Probe = _frame(11, "Probe", [("ReqID", U64)])
ProbeReply = _frame(12, "ProbeReply", [("ReqID", U64), ("Store", STR), ("Group", INT), ("GroupID", STR), ("HasState", BOOL), ("State", STR), ("Leader", STR),
                                       ("AppliedIndex", U64), ("LastIndex", U64), ("LastTerm", U64), ("CatchingUp", BOOL), ("KnownGroups", [GroupIdentity]),
                                       ("LastStop", STR), ("CatchUpTarget", U64), ("CatchUpBytes", U64)])
Sources = _frame(13, "Sources", [("ReqID", U64), ("After", STR)])
SourceList = _frame(14, "SourceList", [("ReqID", U64), ("Group", INT), ("GroupID", STR), ("Sources", [SourceState]), ("Next", STR)])
Subscribe = _frame(15, "Subscribe", [("ReqID", U64), ("Source", STR), ("From", U64), ("Receiver", STR)])
Deliver = _frame(16, "Deliver", [("ReqID", U64), ("Source", STR), ("Through", U64), ("HighSeq", U64), ("LowSeq", U64), ("Msgs", [Msg]),
                                 ("Released", U64), ("Unpublished", [Range])])
Consumed = _frame(17, "Consumed", [("ReqID", U64), ("Source", STR), ("Receiver", STR), ("Seq", U64)])
OK = _frame(18, "OK", [("ReqID", U64)])
Shutdown = _frame(19, "Shutdown", [("ReqID", U64), ("Token", STR)])
KeepAlive = _frame(20, "KeepAlive", [("Source", STR), ("Session", STR), ("Leaving", BOOL), ("UnusedFrom", U64), ("UnusedTo", U64)])
Nak = _frame(21, "Nak", [("ReqID", U64), ("Source", STR), ("FirstSeq", U64), ("LastSeq", U64), ("HighSeq", U64), ("Lost", [Range])])

# Durable receivers, receiver-paced persistence, confirmed delivery and
# intragroup stability (docs/protocol.md, frames 22-29).
ReceiverState = Struct("ReceiverState", [("Name", STR), ("Consumed", U64), ("Paced", BOOL), ("Active", BOOL), ("LastActivityUnixNano", I64)])
SourceReceivers = Struct("SourceReceivers", [("Source", STR), ("HighSeq", U64), ("Pacing", STR), ("Receivers", [ReceiverState])])

RegisterReceiver = _frame(22, "RegisterReceiver", [("ReqID", U64), ("Source", STR), ("Receiver", STR), ("Session", STR), ("Paced", BOOL)])
ReceiverRegistered = _frame(23, "ReceiverRegistered", [("ReqID", U64), ("Source", STR), ("Receiver", STR), ("Group", INT), ("GroupID", STR), ("Known", BOOL),
                                                       ("Recorded", BOOL), ("Consumed", U64), ("HighSeq", U64), ("LowSeq", U64), ("Pacing", STR)])
ConsumedAs = _frame(24, "ConsumedAs", [("ReqID", U64), ("Source", STR), ("Receiver", STR), ("Session", STR), ("Seq", U64), ("Leaving", BOOL)])
ReceiverQuery = _frame(25, "ReceiverQuery", [("ReqID", U64), ("Source", STR), ("Receiver", STR)])
ReceiverReport = _frame(26, "ReceiverReport", [("ReqID", U64), ("Store", STR), ("Group", INT), ("Leader", BOOL), ("AppliedIndex", U64), ("Sources", [SourceReceivers])])
RegisterSource = _frame(27, "RegisterSource", [("ReqID", U64), ("Source", STR), ("Session", STR), ("Pacing", STR), ("Delivery", BOOL), ("Intragroup", STR)])
Delivery = _frame(28, "Delivery", [("Source", STR), ("Receivers", [ReceiverState])])
HeldBack = _frame(29, "HeldBack", [("Source", STR), ("Reason", STR)])
Ping = _frame(30, "Ping", [("ReqID", U64)])
Pong = _frame(31, "Pong", [("ReqID", U64), ("Store", STR), ("Group", INT), ("Groups", INT), ("Leading", BOOL), ("Leader", STR), ("LeaderName", STR),
                           ("AppliedIndex", U64), ("LastIndex", U64), ("CatchingUp", BOOL), ("PolicyDigest", STR), ("Policy", STR),
                           ("FormatLevel", U64), ("ActiveLevel", U64), ("Version", STR)])
RangeDigest = _frame(32, "RangeDigest", [("ReqID", U64), ("Source", STR), ("From", U64), ("To", U64), ("MaxCount", INT)])
RangeDigestReply = _frame(33, "RangeDigestReply", [("ReqID", U64), ("Source", STR), ("Known", BOOL), ("Through", U64), ("Count", U64), ("Sum", BIN)])

# Member addresses: where a group's stores listen now, and a member's move
# to a replaced host (docs/protocol.md, frames 40-44). A client only needs
# Members; the move is between stores, proved with the member secret.
MemberAddr = Struct("MemberAddr", [("Name", STR), ("RaftAddr", STR), ("ClientAddr", STR), ("Moved", BOOL), ("Recorded", BOOL)])

Members = _frame(40, "Members", [("ReqID", U64)])
MemberList = _frame(41, "MemberList", [("ReqID", U64), ("Store", STR), ("Group", INT), ("GroupID", STR), ("Members", [MemberAddr])])
MemberMove = _frame(42, "MemberMove", [("ReqID", U64), ("Store", STR), ("RaftAddr", STR), ("ClientAddr", STR), ("Nonce", BIN), ("AcceptorNonce", BIN), ("Proof", BIN)])
MemberChallenge = _frame(43, "MemberChallenge", [("ReqID", U64), ("Store", STR), ("Nonce", BIN)])
MemberMoved = _frame(44, "MemberMoved", [("ReqID", U64), ("Store", STR), ("Verdict", STR), ("Reason", STR), ("Recorded", BOOL), ("Proof", BIN)])
Backup = _frame(50, "Backup", [("ReqID", U64), ("Token", STR)])
BackupChunk = _frame(51, "BackupChunk", [("ReqID", U64), ("Store", STR), ("Group", INT), ("GroupID", STR), ("Index", U64), ("Term", U64), ("Size", I64), ("Data", BIN), ("Last", BOOL)])

# Pacing modes (RegisterSource.Pacing, ReceiverRegistered.Pacing) and
# intragroup behaviours (RegisterSource.Intragroup, Registered.Intragroup).
PACING_NONE, PACING_BLOCKING, PACING_NON_BLOCKING = "", "blocking", "non-blocking"
INTRAGROUP = ("quorum", "all-active", "all")

BY_NAME = {st.name: st for st in FRAMES.values()}
for _st in (Msg, Range, GroupIdentity, SourceState, ReceiverState, SourceReceivers, MemberAddr):
    BY_NAME[_st.name] = _st


# --- checksums

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC32C (Castagnoli) of data, as a store and the Go SDKs compute it
    for each payload (Publish.Checksums, Msg.CRC)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def intact(m):
    """Whether a received Msg matches its CRC; a Msg without one (0, from
    a store that knows none) is taken as it is."""
    return m.crc == 0 or crc32c(m.payload) == m.crc


# --- encoding

def _pack_value(kind, v, out):
    if isinstance(kind, list):
        if v is None:
            out.append(b"\xc0")
            return
        n = len(v)
        out.append(bytes([0x90 | n]) if n < 16 else struct.pack(">BH", 0xdc, n) if n <= 0xFFFF else struct.pack(">BI", 0xdd, n))
        for item in v:
            _pack_value(kind[0], item, out)
    elif isinstance(kind, Struct):
        _pack_struct(kind, v, out)
    elif kind == U64:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >= 1 << 64:
            raise ValueError("a u64 field needs an integer 0..2^64-1, not %r" % (v,))
        out.append(struct.pack(">BQ", 0xcf, v))
    elif kind == U32:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >= 1 << 32:
            raise ValueError("a u32 field needs an integer 0..2^32-1, not %r" % (v,))
        out.append(struct.pack(">BI", 0xce, v))
    elif kind == I64:
        if not isinstance(v, int) or isinstance(v, bool) or not -(1 << 63) <= v < 1 << 63:
            raise ValueError("an i64 field needs an integer -2^63..2^63-1, not %r" % (v,))
        out.append(struct.pack(">Bq", 0xd3, v))
    elif kind == BIN:
        out.append(msgpack.packb(bytes(v), use_bin_type=True))
    elif kind == STR:
        if not isinstance(v, str):
            raise ValueError("a str field needs a string, not %r" % (v,))
        out.append(msgpack.packb(v, use_bin_type=True))
    elif kind == BOOL:
        out.append(b"\xc3" if v else b"\xc2")
    else:  # INT
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError("an int field needs an integer, not %r" % (v,))
        out.append(msgpack.packb(v))


def _pack_struct(st, m, out):
    n = len(st.fields)
    out.append(bytes([0x90 | n]) if n < 16 else struct.pack(">BH", 0xdc, n))
    for _, snake, kind in st.fields:
        _pack_value(kind, getattr(m, snake), out)


def encode(m):
    """Return the whole frame (length, type, body) for message m."""
    st = m.STRUCT
    out = [bytes([st.type])]
    _pack_struct(st, m, out)
    body = b"".join(out)
    return struct.pack(">I", len(body)) + body


# --- decoding

def _conform(kind, v):
    """Turn a decoded msgpack value into the field's value: nil is zero,
    arrays of structs become messages, other kinds are checked."""
    if v is None:
        return _zero(kind)
    if isinstance(kind, list):
        if not isinstance(v, list):
            raise MalformedError("an array field holds %s" % type(v).__name__)
        return [_conform(kind[0], x) for x in v]
    if isinstance(kind, Struct):
        if not isinstance(v, list):
            raise MalformedError("a %s is an array, not %s" % (kind.name, type(v).__name__))
        return _from_array(kind, v)
    ok = {U64: lambda x: isinstance(x, int) and not isinstance(x, bool) and x >= 0,
          U32: lambda x: isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 32,
          I64: lambda x: isinstance(x, int) and not isinstance(x, bool) and -(1 << 63) <= x < 1 << 63,
          INT: lambda x: isinstance(x, int) and not isinstance(x, bool),
          STR: lambda x: isinstance(x, str),
          BIN: lambda x: isinstance(x, (bytes, bytearray)),
          BOOL: lambda x: isinstance(x, bool)}[kind]
    if not ok(v):
        raise MalformedError("a %s field holds %r" % (kind, v))
    return bytes(v) if kind == BIN else v


def _from_array(st, arr):
    kw = {}
    for i, (_, snake, kind) in enumerate(st.fields):
        kw[snake] = _conform(kind, arr[i]) if i < len(arr) else _zero(kind)
    return st.cls(**kw)  # fields past the known ones are ignored


def decode(frame):
    """Decode one frame without its length prefix: the type byte and the
    msgpack body."""
    if not frame:
        raise MalformedError("empty frame")
    st = FRAMES.get(frame[0])
    if st is None:
        raise UnknownTypeError("unknown frame type %d" % frame[0])
    try:
        arr = msgpack.unpackb(frame[1:], raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.exceptions.UnpackException) as e:
        raise MalformedError("type %d: %s" % (frame[0], e)) from None
    if not isinstance(arr, list):
        raise MalformedError("type %d: the body is not an array" % frame[0])
    return _from_array(st, arr)


# --- JSON, as the golden frames write messages (protocol field names,
# bytes as base64)

def to_json(m):
    import base64

    def val(kind, v):
        if isinstance(kind, list):
            return [val(kind[0], x) for x in v]
        if isinstance(kind, Struct):
            return {n: val(k, getattr(v, s)) for n, s, k in kind.fields}
        if kind == BIN:
            return base64.b64encode(v).decode()
        return v
    return {n: val(k, getattr(m, s)) for n, s, k in m.STRUCT.fields}


def from_json(name, obj):
    import base64
    st = BY_NAME[name]

    def val(kind, v):
        if v is None:
            return None if isinstance(kind, list) else _zero(kind)
        if isinstance(kind, list):
            return [val(kind[0], x) for x in v]
        if isinstance(kind, Struct):
            return kind.cls(**{s: val(k, v.get(n)) for n, s, k in kind.fields})
        if kind == BIN:
            return base64.b64decode(v)
        return v
    return st.cls(**{s: val(k, obj.get(n)) for n, s, k in st.fields})


# --- connections

class Conn:
    """A framed connection to a store. read() returns the next message;
    write() sends one or more."""

    def __init__(self, sock, max_frame=MAX_FRAME):
        self.sock = sock
        self.max_frame = max_frame
        self.buf = bytearray()

    write_timeout = 10.0

    def write(self, *msgs):
        self.sock.settimeout(self.write_timeout)
        self.sock.sendall(b"".join(encode(m) for m in msgs))

    def has_frame(self):
        """Whether a whole frame is buffered (or, over TLS, decrypted bytes
        wait), so read(0) returns without the network."""
        if len(self.buf) >= 4 and len(self.buf) >= 4 + struct.unpack(">I", self.buf[:4])[0]:
            return True
        pending = getattr(self.sock, "pending", None)
        return bool(pending and pending())

    def read(self, timeout=None):
        """Return the next message, or None if none arrived within timeout
        (None: wait without bound; 0: only what has arrived). A frame of an
        unknown type or a malformed body raises, leaving the stream at the
        next frame."""
        deadline = None if timeout is None else time.monotonic() + timeout
        first = True
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack(">I", self.buf[:4])[0]
                if n > self.max_frame:
                    raise FrameTooLargeError("the store sent a frame of %d bytes (limit %d)" % (n, self.max_frame))
                if len(self.buf) >= 4 + n:
                    frame = bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return decode(frame)
            if deadline is None:
                self.sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0 and not first:
                    return None
                self.sock.settimeout(max(left, 0))
            first = False
            try:
                chunk = self.sock.recv(1 << 16)
            except (socket.timeout, BlockingIOError, ssl.SSLWantReadError):
                if deadline is not None and deadline - time.monotonic() <= 0:
                    return None
                continue
            if not chunk:
                raise ConnectionError("the store closed the connection")
            self.buf += chunk

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def join_host_port(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def split_host_port(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def dial(addr, client="python", token="", ssl_context=None, timeout=5.0):
    """Connect to a store's client address, do the TLS handshake if
    ssl_context is given, and the protocol handshake. Returns (Conn,
    Welcome). Raises Unauthorized for a refused token, StoreError for
    another refusal, OSError when the store cannot be reached."""
    host, port = split_host_port(addr)
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except ssl.SSLError as e:
                raise _tls_refusal(addr, e) from e
        c = Conn(sock)
        c.write(Hello(version=VERSION, client=client, token=token or ""))
        try:
            m = c.read(timeout)
        except ssl.SSLError as e:
            # With TLS 1.3 a store that wants a client certificate says so
            # on the first read, not in the handshake.
            raise _tls_refusal(addr, e) from e
        if m is None:
            raise TimeoutError("store %s did not answer the handshake within %.1fs" % (addr, timeout))
        if isinstance(m, Error):
            if m.code == CODE_UNAUTHORIZED:
                raise Unauthorized(m)
            raise StoreError(m)
        if not isinstance(m, Welcome):
            raise MalformedError("store %s answered Hello with %s" % (addr, type(m).__name__))
        if m.version != VERSION:
            raise ProtocolError("store %s speaks protocol version %d, this client %d" % (addr, m.version, VERSION))
        return c, m
    except BaseException:
        sock.close()
        raise


def _tls_refusal(addr, e):
    """The error for a TLS failure: TLSRefused when it is over a
    certificate, else e itself (an OSError: retried like any other)."""
    if "CERTIFICATE" in (getattr(e, "reason", "") or "").upper() or "certificate" in str(e).lower():
        return TLSRefused("store %s refused the TLS handshake: %s (check the client's certificate and the CA it trusts)" % (addr, e))
    return e


def check_source_name(name):
    """Raise ValueError unless name may name a source (docs/protocol.md
    section 10)."""
    import unicodedata
    b = name.encode("utf-8", "surrogatepass")
    if not name:
        raise ValueError("invalid source name: the name is empty")
    if len(b) > MAX_SOURCE_NAME:
        raise ValueError("invalid source name: %d bytes; the limit is %d" % (len(b), MAX_SOURCE_NAME))
    for i, ch in enumerate(name):
        cat = unicodedata.category(ch)
        if ch != " " and (cat[0] in "CZ"):
            raise ValueError("invalid source name: %r has the unprintable character U+%04X at %d" % (name, ord(ch), i))
