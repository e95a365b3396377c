package wire

import (
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// Fields added to a message after its first version. A message body is a
// msgpack array whose elements are the fields in order, and the msgpack
// library decodes an array into a struct only when the counts match
// exactly; so a message that gained fields decodes itself here:
//
//   - it accepts the older, shorter array (the added fields stay zero), so
//     a store reads an older client's frames and a client an older store's;
//   - it skips elements beyond the fields it knows, so a later version may
//     append more;
//   - it writes the older array when the added fields are zero, so an older
//     peer reads what a newer one sends whenever it does not use them
//     (Shutdown excepted: it has been written with Token since Token was
//     added, and is only read both ways).
//
// Fields are only ever appended, never removed or reordered.
//
//	message   fields (first version)                        appended
//	Publish   ReqID Source FirstSeq Payloads                Checksums
//	Msg       Seq Payload                                   CRC
//	Fetch     ReqID Source From To MaxCount MaxBytes        Local
//	Shutdown  ReqID                                         Token

// arrayLen reads an array header holding at least min elements.
func arrayLen(d *msgpack.Decoder, what string, min int) (int, error) {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return 0, err
	}
	if n < min {
		return 0, fmt.Errorf("%s has %d fields, want at least %d", what, n, min)
	}
	return n, nil
}

// skipRest skips the elements of an array beyond the known fields.
func skipRest(d *msgpack.Decoder, n, known int) error {
	for i := known; i < n; i++ {
		if err := d.Skip(); err != nil {
			return err
		}
	}
	return nil
}

func decodeUint32(d *msgpack.Decoder) (uint32, error) {
	v, err := d.DecodeUint64()
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint32 {
		return 0, fmt.Errorf("checksum %d does not fit in 32 bits", v)
	}
	return uint32(v), nil
}

// EncodeMsgpack writes p, with Checksums only when it has some.
func (p *Publish) EncodeMsgpack(e *msgpack.Encoder) error {
	n := 4
	if len(p.Checksums) > 0 {
		n = 5
	}
	if err := e.EncodeArrayLen(n); err != nil {
		return err
	}
	if err := e.EncodeUint(p.ReqID); err != nil {
		return err
	}
	if err := e.EncodeString(p.Source); err != nil {
		return err
	}
	if err := e.EncodeUint(p.FirstSeq); err != nil {
		return err
	}
	if err := encodeByteSlices(e, p.Payloads); err != nil {
		return err
	}
	if n == 5 {
		if err := e.EncodeArrayLen(len(p.Checksums)); err != nil {
			return err
		}
		for _, c := range p.Checksums {
			if err := e.EncodeUint(uint64(c)); err != nil {
				return err
			}
		}
	}
	return nil
}

// DecodeMsgpack reads a Publish with or without Checksums.
func (p *Publish) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := arrayLen(d, "Publish", 4)
	if err != nil {
		return err
	}
	if p.ReqID, err = d.DecodeUint64(); err != nil {
		return err
	}
	if p.Source, err = d.DecodeString(); err != nil {
		return err
	}
	if p.FirstSeq, err = d.DecodeUint64(); err != nil {
		return err
	}
	if p.Payloads, err = decodeByteSlices(d); err != nil {
		return err
	}
	p.Checksums = nil
	if n >= 5 {
		k, err := d.DecodeArrayLen()
		if err != nil {
			return err
		}
		if k > 0 {
			p.Checksums = make([]uint32, k)
			for i := range p.Checksums {
				if p.Checksums[i], err = decodeUint32(d); err != nil {
					return err
				}
			}
		}
	}
	return skipRest(d, n, 5)
}

func encodeByteSlices(e *msgpack.Encoder, bs [][]byte) error {
	if bs == nil {
		return e.EncodeNil()
	}
	if err := e.EncodeArrayLen(len(bs)); err != nil {
		return err
	}
	for _, b := range bs {
		if err := e.EncodeBytes(b); err != nil {
			return err
		}
	}
	return nil
}

func decodeByteSlices(d *msgpack.Decoder) ([][]byte, error) {
	k, err := d.DecodeArrayLen()
	if err != nil || k < 0 {
		return nil, err
	}
	out := make([][]byte, k)
	for i := range out {
		if out[i], err = d.DecodeBytes(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// EncodeMsgpack writes m, with CRC only when it is known.
func (m Msg) EncodeMsgpack(e *msgpack.Encoder) error {
	n := 2
	if m.CRC != 0 {
		n = 3
	}
	if err := e.EncodeArrayLen(n); err != nil {
		return err
	}
	if err := e.EncodeUint(m.Seq); err != nil {
		return err
	}
	if err := e.EncodeBytes(m.Payload); err != nil {
		return err
	}
	if n == 3 {
		return e.EncodeUint(uint64(m.CRC))
	}
	return nil
}

// DecodeMsgpack reads a Msg with or without CRC.
func (m *Msg) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := arrayLen(d, "Msg", 2)
	if err != nil {
		return err
	}
	if m.Seq, err = d.DecodeUint64(); err != nil {
		return err
	}
	if m.Payload, err = d.DecodeBytes(); err != nil {
		return err
	}
	m.CRC = 0
	if n >= 3 {
		if m.CRC, err = decodeUint32(d); err != nil {
			return err
		}
	}
	return skipRest(d, n, 3)
}

// EncodeMsgpack writes f, with Local only when it is set.
func (f *Fetch) EncodeMsgpack(e *msgpack.Encoder) error {
	n := 6
	if f.Local {
		n = 7
	}
	if err := e.EncodeArrayLen(n); err != nil {
		return err
	}
	if err := e.EncodeUint(f.ReqID); err != nil {
		return err
	}
	if err := e.EncodeString(f.Source); err != nil {
		return err
	}
	if err := e.EncodeUint(f.From); err != nil {
		return err
	}
	if err := e.EncodeUint(f.To); err != nil {
		return err
	}
	if err := e.EncodeInt(int64(f.MaxCount)); err != nil {
		return err
	}
	if err := e.EncodeInt(int64(f.MaxBytes)); err != nil {
		return err
	}
	if n == 7 {
		return e.EncodeBool(true)
	}
	return nil
}

// DecodeMsgpack reads a Fetch with or without Local.
func (f *Fetch) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := arrayLen(d, "Fetch", 6)
	if err != nil {
		return err
	}
	if f.ReqID, err = d.DecodeUint64(); err != nil {
		return err
	}
	if f.Source, err = d.DecodeString(); err != nil {
		return err
	}
	if f.From, err = d.DecodeUint64(); err != nil {
		return err
	}
	if f.To, err = d.DecodeUint64(); err != nil {
		return err
	}
	if f.MaxCount, err = d.DecodeInt(); err != nil {
		return err
	}
	if f.MaxBytes, err = d.DecodeInt(); err != nil {
		return err
	}
	f.Local = false
	if n >= 7 {
		if f.Local, err = d.DecodeBool(); err != nil {
			return err
		}
	}
	return skipRest(d, n, 7)
}

// DecodeMsgpack reads a Shutdown with or without Token. It is always
// written with Token (stores that know Token read only that shape), but a
// client from before Token sent ReqID alone.
func (s *Shutdown) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := arrayLen(d, "Shutdown", 1)
	if err != nil {
		return err
	}
	if s.ReqID, err = d.DecodeUint64(); err != nil {
		return err
	}
	s.Token = ""
	if n >= 2 {
		if s.Token, err = d.DecodeString(); err != nil {
			return err
		}
	}
	return skipRest(d, n, 2)
}
