"""The deployment reader: the files `umstored plan` writes, hand edits in
the same subset, JSON, and refusals that name the line."""

import json
import os
import tempfile
import time
import unittest

from umstore import deployment

PLANNED = """version: 1
name: umstore
hosts:
  - {name: A, address: 127.0.0.2}
  - {name: B, address: 127.0.0.3}
groups:
  - index: 1
    stores:
      - {name: G1S1, host: A, raft-port: 14011, client-port: 15011}
      - {name: G1S2, host: A, raft-port: 14012, client-port: 15012}
      - {name: G1S3, host: B, raft-port: 14013, client-port: 15013}
  - index: 2
    stores:
      - {name: G2S1, host: A, raft-port: 14021, client-port: 15021}
      - {name: G2S2, host: B, raft-port: 14022, client-port: 15022}
      - {name: G2S3, host: B, raft-port: 14023, client-port: 15023}
stability: {intragroup: quorum, intergroup: any}
security:
  member-secret-file: d.member-secret
"""

EDITED = """# edited by hand
version: 1
name: "my deployment"   # quoted, with a comment
hosts:
- name: A
  address: '127.0.0.2'
- {name: B, address: "127.0.0.3"}
groups:
  - index: 2
    stores: [{name: G2S1, host: A, raft-port: 1, client-port: 15021}]
  - index: 1
    stores:
      - name: G1S1
        host: B
        raft-port: 2
        client-port: 15011
stability:
  intragroup: quorum
  intergroup: any-group
security:
  token-file: token   # relative to the file
  tls:
    ca: ca.pem
    client-auth: false
"""


class YAMLSubset(unittest.TestCase):
    def test_planned_file(self):
        v = deployment.parse_yaml(PLANNED)
        self.assertEqual(v["hosts"][1], {"name": "B", "address": "127.0.0.3"})
        self.assertEqual(v["groups"][1]["stores"][2]["client-port"], 15023)
        self.assertEqual(v["stability"], {"intragroup": "quorum", "intergroup": "any"})
        self.assertEqual(v["security"], {"member-secret-file": "d.member-secret"})

    def test_hand_edits(self):
        v = deployment.parse_yaml(EDITED)
        self.assertEqual(v["name"], "my deployment")
        self.assertEqual(v["hosts"], [{"name": "A", "address": "127.0.0.2"}, {"name": "B", "address": "127.0.0.3"}])
        self.assertEqual(v["groups"][1]["stores"][0], {"name": "G1S1", "host": "B", "raft-port": 2, "client-port": 15011})
        self.assertEqual(v["security"]["tls"], {"ca": "ca.pem", "client-auth": False})

    def test_refusals_name_the_line(self):
        for text, want in [
            ("a: &x 1\n", ":1: '&'"),
            ("a: |\n  text\n", ":1: '|'"),
            ("a: 1\n---\nb: 2\n", ":2: a second YAML document"),
            ("a: {b: 1\n", ":1: a flow collection must end on its line"),
            ("a: 1\na: 2\n", ":2: the key 'a' appears twice"),
            ("a: 1\n   b: 2\n", ":2: unexpected indentation"),
            ("a:\n\tb: 1\n", ":2: indentation with a tab"),
        ]:
            with self.subTest(text=text):
                with self.assertRaises(deployment.DeploymentError) as cm:
                    deployment.parse_yaml(text, "f.yaml")
                self.assertIn(want, str(cm.exception))


class Deployments(unittest.TestCase):
    def write(self, name, text):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: [os.remove(os.path.join(d, f)) for f in os.listdir(d)] and os.rmdir(d))
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_groups_in_index_order(self):
        d = deployment.load(self.write("d.yaml", EDITED))
        self.assertEqual(d.addrs(), [["127.0.0.3:15011"], ["127.0.0.2:15021"]])
        self.assertEqual(d.store("G2S1"), "127.0.0.2:15021")
        self.assertEqual(d.intergroup, "any-group")
        self.assertEqual(d.resolve("token"), os.path.join(os.path.dirname(d.path), "token"))

    def test_token(self):
        p = self.write("d.yaml", EDITED)
        with open(os.path.join(os.path.dirname(p), "token"), "w") as f:
            f.write("  s3cret\n")
        self.assertEqual(deployment.load(p).token(), "s3cret")

    def test_json_and_plan_json(self):
        data = deployment.parse_yaml(PLANNED)
        for text in (json.dumps(data), json.dumps({"deployment": data, "layout": "..."})):
            d = deployment.load(self.write("d.json", text))
            self.assertEqual(len(d.addrs()), 2)
            self.assertEqual(d.addrs()[0][0], "127.0.0.2:15011")

    def test_client_auth_without_a_certificate(self):
        p = self.write("d.yaml", PLANNED.replace("  member-secret-file: d.member-secret\n", "  tls: {ca: ca.pem, cert: s.pem, key: s.key, client-auth: true}\n"))
        with self.assertRaises(deployment.DeploymentError) as cm:
            deployment.load(p).ssl_context()
        self.assertIn("require a client certificate", str(cm.exception))


    def test_security_files_are_checked(self):
        # The files the client reads for its token and TLS are regular
        # files within a bound, as umstored's: before, /dev/zero was read
        # until memory ran out, a FIFO hung the client and a key was sent
        # as the token.
        d = os.path.dirname(self.write("x", ""))
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        good = self.write("token", "s3cret\n")
        key = self.write("id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n")
        big = self.write("big", "x" * 4097)
        big_pem = self.write("big.pem", "x" * ((1 << 20) + 1))
        for name, run, want in [
            ("a good token", lambda: deployment.read_token(good), None),
            ("/dev/zero", lambda: deployment.read_token("/dev/zero"), "/dev/zero is a character device, not a regular file"),
            ("a FIFO", lambda: deployment.read_token(fifo), fifo + " is a FIFO"),
            ("a directory", lambda: deployment.read_token(d), d + " is a directory"),
            ("over 4 KiB", lambda: deployment.read_token(big), "larger than 4096 bytes"),
            ("several lines", lambda: deployment.read_token(key), "holds several lines"),
            ("a CA of /dev/zero", lambda: deployment.make_ssl_context("/dev/zero"), "CA certificate (security.tls.ca or --tls-ca) /dev/zero is a character device"),
            ("a CA over 1 MiB", lambda: deployment.make_ssl_context(big_pem), "larger than 1048576 bytes"),
        ]:
            with self.subTest(name):
                start = time.monotonic()
                if want is None:
                    self.assertEqual(run(), "s3cret")
                else:
                    with self.assertRaises(deployment.DeploymentError) as cm:
                        run()
                    self.assertIn(want, str(cm.exception))
                self.assertLess(time.monotonic() - start, 1.0)

    def test_paths_may_not_climb_out(self):
        p = self.write("d.yaml", PLANNED.replace("  member-secret-file: d.member-secret\n", "  token-file: ../home/x/.ssh/id_rsa\n"))
        with self.assertRaises(deployment.DeploymentError) as cm:
            deployment.load(p).token()
        self.assertIn("security.token-file '../home/x/.ssh/id_rsa' climbs out of the deployment file's directory", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
