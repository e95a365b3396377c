"""Reading a deployment file, and the security it names.

The deployment file is YAML, written by `umstored plan` or `umstored dev`.
This client reads it with the standard library alone: JSON (JSON is YAML,
and `umstored plan --json` prints the deployment as JSON) or the subset of
YAML these commands write, which is also what people write by hand when
they edit such a file: block mappings and sequences by indentation, flow
mappings and sequences on one line ({name: A, address: 127.0.0.2}), plain,
single- and double-quoted scalars, comments. Anything else (anchors, tags,
multi-line scalars, several documents) is refused with the line it is on,
rather than guessed at.
"""

import json
import os
import re
import ssl
import stat

from . import wire


class DeploymentError(Exception):
    """The deployment file cannot be read or does not describe stores."""


# --- the YAML subset

class _Line:
    __slots__ = ("no", "indent", "text")

    def __init__(self, no, indent, text):
        self.no, self.indent, self.text = no, indent, text


def _strip_comment(s):
    out, quote, i = [], None, 0
    while i < len(s):
        c = s[i]
        if quote:
            out.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(s):
                out.append(s[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).rstrip()


def _lines(text, source):
    out = []
    for no, raw in enumerate(text.split("\n"), 1):
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise DeploymentError("%s:%d: indentation with a tab; YAML indents with spaces" % (source, no))
        s = _strip_comment(raw)
        if not s.strip():
            continue
        if s.strip() in ("---", "...") and not out:
            continue
        if s.strip() in ("---", "..."):
            raise DeploymentError("%s:%d: a second YAML document; a deployment file holds one" % (source, no))
        indent = len(s) - len(s.lstrip(" "))
        out.append(_Line(no, indent, s.strip()))
    return out


class _Parser:
    def __init__(self, lines, source):
        self.lines, self.source, self.i = lines, source, 0

    def fail(self, line, msg):
        raise DeploymentError("%s:%d: %s" % (self.source, line.no, msg))

    def block(self, indent):
        line = self.lines[self.i]
        if line.text == "-" or line.text.startswith("- "):
            return self.sequence(line.indent)
        return self.mapping(line.indent)

    def sequence(self, indent):
        out = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.indent != indent or not (line.text == "-" or line.text.startswith("- ")):
                if line.indent > indent:
                    self.fail(line, "unexpected indentation")
                break
            rest = line.text[1:].lstrip(" ")
            if not rest:
                self.i += 1
                if self.i < len(self.lines) and self.lines[self.i].indent > indent:
                    out.append(self.block(self.lines[self.i].indent))
                else:
                    out.append(None)
                continue
            if self._key(rest, line) is not None and not rest.startswith(("{", "[")):
                # "- key: value" starts a mapping indented at the key.
                inner = line.indent + (len(line.text) - len(rest))
                self.lines[self.i] = _Line(line.no, inner, rest)
                out.append(self.mapping(inner))
                continue
            self.i += 1
            out.append(self.scalar_or_flow(rest, line))
        return out

    def mapping(self, indent):
        out = {}
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.indent != indent:
                if line.indent > indent:
                    self.fail(line, "unexpected indentation")
                break
            if line.text.startswith("- "):
                break
            kv = self._key(line.text, line)
            if kv is None:
                self.fail(line, "expected \"key: value\"")
            key, rest = kv
            if key in out:
                self.fail(line, "the key %r appears twice" % key)
            self.i += 1
            if rest:
                out[key] = self.scalar_or_flow(rest, line)
            elif self.i < len(self.lines) and (self.lines[self.i].indent > indent or
                                               (self.lines[self.i].indent == indent and self.lines[self.i].text.startswith("- "))):
                out[key] = self.block(self.lines[self.i].indent)
            else:
                out[key] = None
        return out

    def _key(self, text, line):
        """Split "key: rest" (rest may be empty); None if text is no key."""
        if text[0] in "'\"":
            val, end = _quoted(text, 0, lambda m: self.fail(line, m))
            rest = text[end:]
            if rest == ":" or rest.startswith(": "):
                return val, rest[1:].strip()
            return None
        m = re.match(r"([^:{}\[\],#&*!|>'\"%@`][^:]*?)\s*:(?:\s+(.*)|$)", text)
        if not m:
            return None
        return m.group(1), (m.group(2) or "").strip()

    def scalar_or_flow(self, text, line):
        if text[0] in "&*!|>":
            self.fail(line, "%r: anchors, aliases, tags and multi-line scalars are not read here; write the value out" % text[0])
        val, end = _flow(text, 0, lambda m: self.fail(line, m))
        if text[end:].strip():
            self.fail(line, "unexpected %r after the value" % text[end:].strip())
        return val


def _quoted(text, i, fail):
    q = text[i]
    i += 1
    out = []
    while i < len(text):
        c = text[i]
        if q == "'" and c == "'":
            if text[i + 1:i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        if q == '"' and c == "\\":
            esc = text[i + 1:i + 2]
            simple = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": "\0", "r": "\r"}
            if esc in simple:
                out.append(simple[esc])
                i += 2
                continue
            if esc == "u":
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            fail("unsupported escape \\" + esc)
        if q == '"' and c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    fail("unterminated quoted string")


_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)$")


def _plain(s):
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _INT.match(s):
        return int(s)
    return s


def _flow(text, i, fail, inside=False):
    """Parse a value at text[i]: a flow mapping, flow sequence, quoted or
    plain scalar. Returns (value, end)."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return None, i
    c = text[i]
    if c in "'\"":
        return _quoted(text, i, fail)
    if c in "{[":
        close = "}" if c == "{" else "]"
        out = {} if c == "{" else []
        i += 1
        while True:
            while i < len(text) and text[i] == " ":
                i += 1
            if i >= len(text):
                fail("a flow collection must end on its line (missing %r)" % close)
            if text[i] == close:
                return out, i + 1
            if c == "{":
                if text[i] in "'\"":
                    key, i = _quoted(text, i, fail)
                else:
                    m = re.compile(r"([^:,{}\[\]]+?)\s*:(?=\s|,|}|$)").match(text, i)
                    if not m:
                        fail("expected \"key: value\" in a flow mapping")
                    key, i = m.group(1).strip(), m.end()
                while i < len(text) and text[i] == " ":
                    i += 1
                if text[i:i + 1] == ":":
                    i += 1
                val, i = _flow(text, i, fail, inside=True)
                if key in out:
                    fail("the key %r appears twice" % key)
                out[key] = val
            else:
                val, i = _flow(text, i, fail, inside=True)
                out.append(val)
            while i < len(text) and text[i] == " ":
                i += 1
            if i >= len(text):
                fail("a flow collection must end on its line (missing %r)" % close)
            if text[i:i + 1] == ",":
                i += 1
            elif text[i:i + 1] != close:
                fail("expected ',' or %r in a flow collection" % close)
    stop = ",}]" if inside else ""
    j = i
    while j < len(text) and text[j] not in stop:
        j += 1
    return _plain(text[i:j].strip()), j


def parse_yaml(text, source="deployment"):
    """Parse the YAML subset described in the module documentation."""
    lines = _lines(text, source)
    if not lines:
        return None
    p = _Parser(lines, source)
    val = p.block(lines[0].indent)
    if p.i < len(p.lines):
        p.fail(p.lines[p.i], "unexpected indentation")
    return val


# --- the deployment

class Deployment:
    """The stores of a deployment and how to reach them securely."""

    def __init__(self, data, path=None):
        if isinstance(data, dict) and "deployment" in data and "groups" not in data:
            data = data["deployment"]  # `umstored plan --json` output
        if not isinstance(data, dict):
            raise DeploymentError("%s: not a deployment (a mapping with hosts and groups)" % path)
        self.path = path
        self.data = data
        if data.get("version") != 1:
            raise DeploymentError("%s: version %r; this client reads deployment files of version 1" % (path, data.get("version")))
        hosts = {}
        for h in data.get("hosts") or []:
            hosts[h.get("name")] = h.get("address")
        self.groups = []  # [(index, [(store name, client address)])] in index order
        for g in data.get("groups") or []:
            stores = []
            for s in g.get("stores") or []:
                addr = hosts.get(s.get("host"))
                if addr is None or not isinstance(s.get("client-port"), int):
                    raise DeploymentError("%s: store %r has no host address or client-port" % (path, s.get("name")))
                stores.append((s.get("name"), wire.join_host_port(str(addr), s["client-port"])))
            self.groups.append((g.get("index"), stores))
        self.groups.sort(key=lambda x: x[0])
        if not self.groups:
            raise DeploymentError("%s: no groups" % path)
        stab = data.get("stability") or {}
        self.intergroup = stab.get("intergroup") or "any"
        self.security = data.get("security") or {}

    def addrs(self):
        """Per group, in index order, the client addresses of its stores."""
        return [[a for _, a in stores] for _, stores in self.groups]

    def store(self, name):
        for _, stores in self.groups:
            for n, a in stores:
                if n == name:
                    return a
        return None

    def resolve(self, p, key="security"):
        """p as it is if absolute, else relative to the deployment file's
        directory. A relative path that climbs out of that directory
        ("..") is refused, as umstored refuses it (docs/security.md)."""
        if not p or os.path.isabs(p):
            return p
        norm = os.path.normpath(p)
        if norm == ".." or norm.startswith(".." + os.sep):
            raise DeploymentError("%s %r climbs out of the deployment file's directory; a relative path names a file in that directory or below it: move the file there, or give an absolute path if you mean a file elsewhere" % (key, p))
        if not self.path:
            return p
        return os.path.join(os.path.dirname(self.path), p)

    def token(self, override=None):
        """The client token (security.token-file, or the override file),
        or "" without one."""
        f = override or self.resolve(self.security.get("token-file"), "security.token-file")
        return read_token(f) if f else ""

    def ssl_context(self, ca=None, cert=None, key=None):
        """The TLS context for the stores (security.tls, overridden by the
        arguments), or None for plain TCP."""
        t = self.security.get("tls")
        if not t and not ca:
            return None
        t = t or {}
        ca = ca or self.resolve(t.get("ca"), "security.tls.ca")
        if not (cert or key):
            cert, key = self.resolve(t.get("client-cert"), "security.tls.client-cert"), self.resolve(t.get("client-key"), "security.tls.client-key")
        if t.get("client-auth") and not (cert and key):
            raise DeploymentError("the stores require a client certificate (security.tls.client-auth): name this client's certificate and key in security.tls.client-cert and client-key, or give --tls-cert and --tls-key; clients do not present the stores' certificate")
        return make_ssl_context(ca, cert, key)


# The bounds of the files a client reads for its security, as umstored's
# (internal/securefile): a token is one line of at most 4 KiB, a PEM file
# at most 1 MiB.
MAX_TOKEN = 4 << 10
MAX_PEM = 1 << 20


def read_checked(path, what, limit):
    """The contents of the regular file at path, at most limit bytes. A
    device (/dev/zero), a FIFO, a directory or a larger file is refused
    at once, naming the file: opened without blocking and checked through
    the open descriptor, never read past limit+1 bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise DeploymentError("read %s: %s" % (what, e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a character device" if stat.S_ISCHR(st.st_mode) else "a device" if stat.S_ISBLK(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "something else")
            raise DeploymentError("%s %s is %s, not a regular file: name a regular file there" % (what, path, kind))
        too_large = DeploymentError("%s %s is larger than %d bytes: is it the file you meant?" % (what, path, limit))
        if st.st_size > limit:
            raise too_large
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
        if len(data) > limit:
            raise too_large
        return data
    except OSError as e:
        raise DeploymentError("read %s %s: %s" % (what, path, e)) from None
    finally:
        os.close(fd)


def make_ssl_context(ca, cert=None, key=None):
    for f, what in ((ca, "the CA certificate (security.tls.ca or --tls-ca)"), (cert, "the client certificate (security.tls.client-cert or --tls-cert)"),
                    (key, "the client key (security.tls.client-key or --tls-key)")):
        if f:
            read_checked(f, what, MAX_PEM)
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    except (OSError, ssl.SSLError) as e:
        raise DeploymentError("read the CA certificate %s (security.tls.ca or --tls-ca): %s" % (ca, e)) from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert or key:
        try:
            ctx.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as e:
            raise DeploymentError("load the client certificate %s / key %s: %s" % (cert, key, e)) from None
    return ctx


def read_token(path, what="the token file (security.token-file or --token-file)"):
    """The token in the file at path: one line of at most MAX_TOKEN
    bytes. An empty file, or one of several lines (a key, a log), is
    refused, so a file not meant is never sent as a token."""
    data = read_checked(path, what, MAX_TOKEN).strip()
    if not data:
        raise DeploymentError("%s %s is empty: write the token there, one line" % (what, path))
    if b"\n" in data or b"\r" in data:
        raise DeploymentError("%s %s holds several lines: a token is one line; is it the file you meant?" % (what, path))
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise DeploymentError("%s %s is not text" % (what, path)) from None


def load(path):
    """Read a deployment file (YAML subset or JSON)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise DeploymentError("read the deployment file: %s" % e) from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise DeploymentError("%s: %s" % (path, e)) from None
    else:
        data = parse_yaml(text, path)
    return Deployment(data, path)


def parse_stores(specs):
    """Parse UM ume_store specs, [DomainID:]IP:port[:RegID[:GroupIDX]],
    into (groups, reg_id): stores with the same GroupIDX (default 0) form
    a group, groups in increasing GroupIDX order; every store must carry
    the same RegID (0: none). "0.0.0.0:0" clears the stores given so far."""
    import ipaddress
    entries = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) >= 3 and not _is_ipv4(parts[0]) and _is_ipv4(parts[1]):
            if parts[0] != "0":
                raise DeploymentError("--store %r: umstore has no UM routing domains; omit the DomainID or give 0" % spec)
            parts = parts[1:]
        if not 2 <= len(parts) <= 4 or not _is_ipv4(parts[0]):
            raise DeploymentError("--store %r: want IP:port[:RegID[:GroupIDX]]" % spec)
        if parts[0] == "0.0.0.0" and parts[1] == "0" and len(parts) == 2:
            entries = []
            continue
        try:
            port = int(parts[1])
            reg = int(parts[2]) if len(parts) > 2 else 0
            idx = int(parts[3]) if len(parts) > 3 else 0
        except ValueError:
            raise DeploymentError("--store %r: port, RegID and GroupIDX are numbers" % spec) from None
        if not 0 < port < 65536 or not 0 <= reg < 1 << 32 or not 0 <= idx <= 255:
            raise DeploymentError("--store %r: port 1..65535, RegID 0..4294967295, GroupIDX 0..255" % spec)
        entries.append((idx, str(ipaddress.ip_address(parts[0])) + ":%d" % port, reg))
    if not entries:
        raise DeploymentError("--store: no stores given")
    regs = {r for _, _, r in entries}
    if len(regs) > 1:
        raise DeploymentError("--store: RegIDs %s differ; give every store the same RegID, or 0" % sorted(regs))
    groups = {}
    for idx, addr, _ in entries:
        groups.setdefault(idx, []).append(addr)
    return [groups[k] for k in sorted(groups)], regs.pop()


def _is_ipv4(s):
    import ipaddress
    try:
        return isinstance(ipaddress.ip_address(s), ipaddress.IPv4Address)
    except ValueError:
        return False
