package repository

import (
	"bytes"
	"errors"
	"testing"
)

// VerifyEntry finds a payload that no longer matches the checksum its
// entry carries, in every command that carries checksums, and passes
// every entry that is intact or carries none.
func TestVerifyEntry(t *testing.T) {
	a, b := []byte("alpha payload"), []byte("beta payload")
	sums := []uint32{Checksum(a), Checksum(b)}
	pub := Publish{Source: "s", FirstSeq: 7, Payloads: [][]byte{a, b}, Checksums: sums}
	plain := Publish{Source: "s", FirstSeq: 7, Payloads: [][]byte{a, b}}
	as := PublishAs{Session: "sess", Publish: pub}
	tests := []struct {
		name    string
		data    []byte
		damaged bool // flip one bit of b inside data
		want    error
	}{
		{"PublishChecksums intact", EncodePublish(pub), false, nil},
		{"PublishChecksums damaged", EncodePublish(pub), true, ErrEntryDamaged},
		{"PublishAsChecksums damaged", EncodePublishAs(as), true, ErrEntryDamaged},
		{"keyed Publish with checksums damaged", keyedOf(pub), true, ErrEntryDamaged},
		{"keyed PublishAs with checksums damaged", keyedOf(as), true, ErrEntryDamaged},
		{"Publish without checksums damaged: nothing to check", EncodePublish(plain), true, nil},
		{"keyed Publish without checksums damaged", keyedOf(plain), true, nil},
		{"not a Publish", EncodeRegister(Register{Source: "s", Session: "sess"}), false, nil},
		{"empty", nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := bytes.Clone(tt.data)
			if tt.damaged {
				i := bytes.Index(data, b)
				if i < 0 {
					t.Fatal("payload not found in the encoded entry")
				}
				data[i+3] ^= 0x01
			}
			err := VerifyEntry(data)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("VerifyEntry = %v, want %v", err, tt.want)
			}
			if err != nil && !bytes.Contains([]byte(err.Error()), []byte("message 8 of source")) {
				t.Fatalf("VerifyEntry = %v, want it to name message 8", err)
			}
		})
	}
}
