package wire

import (
	"errors"
	"testing"
)

// Checksum is CRC32C (Castagnoli): the standard check value of the
// polynomial, so any implementation on the other side agrees.
func TestChecksumIsCRC32C(t *testing.T) {
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("Checksum(123456789) = %08x, want e3069283 (CRC32C)", got)
	}
}

func TestVerifyChecksums(t *testing.T) {
	a, b := []byte("alpha"), []byte("beta")
	tests := []struct {
		name    string
		p       Publish
		wantSeq uint64 // the damaged message; 0: none
		shape   bool   // refused by CheckShape
	}{
		{"intact", Publish{FirstSeq: 10, Payloads: [][]byte{a, b}, Checksums: []uint32{Checksum(a), Checksum(b)}}, 0, false},
		{"without checksums (an older publisher)", Publish{FirstSeq: 10, Payloads: [][]byte{a, b}}, 0, false},
		{"second payload changed after its checksum", Publish{FirstSeq: 10, Payloads: [][]byte{a, []byte("bets")}, Checksums: []uint32{Checksum(a), Checksum(b)}}, 11, false},
		{"a checksum damaged", Publish{FirstSeq: 10, Payloads: [][]byte{a, b}, Checksums: []uint32{Checksum(a) ^ 1, Checksum(b)}}, 10, false},
		{"fewer checksums than payloads", Publish{FirstSeq: 10, Payloads: [][]byte{a, b}, Checksums: []uint32{Checksum(a)}}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Source = "s"
			if err := tt.p.CheckShape(); (err != nil) != tt.shape {
				t.Fatalf("CheckShape = %v, want refused %v", err, tt.shape)
			}
			err := tt.p.VerifyChecksums()
			var ce *ChecksumError
			switch {
			case tt.shape:
				if err == nil {
					t.Fatal("VerifyChecksums accepted checksums that do not pair with the payloads")
				}
			case tt.wantSeq == 0:
				if err != nil {
					t.Fatalf("VerifyChecksums = %v, want nil", err)
				}
			case !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || ce.Seq != tt.wantSeq || ce.Source != "s":
				t.Fatalf("VerifyChecksums = %v, want a ChecksumError for message %d", err, tt.wantSeq)
			}
		})
	}
}

func TestMsgIntactAndVerified(t *testing.T) {
	p := []byte("payload")
	tests := []struct {
		name             string
		m                Msg
		intact, verified bool
	}{
		{"matching CRC", Msg{Seq: 1, Payload: p, CRC: Checksum(p)}, true, true},
		{"no CRC (an older store)", Msg{Seq: 1, Payload: p}, true, false},
		{"payload damaged", Msg{Seq: 1, Payload: []byte("paylaod"), CRC: Checksum(p)}, false, false},
		{"empty payload, wrong CRC", Msg{Seq: 1, CRC: Checksum(nil) + 1}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Intact(); got != tt.intact {
				t.Fatalf("Intact = %v, want %v", got, tt.intact)
			}
			if got := tt.m.Verified(); got != tt.verified {
				t.Fatalf("Verified = %v, want %v", got, tt.verified)
			}
		})
	}
}
