//lint:file-ignore U1000 the msgpack reference types carry a _msgpack field that msgpack reads by reflection (as_array)

package repository

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzDecodeCommand feeds DecodeCommand arbitrary entries, as a corrupted or
// hostile log could. It must never panic; whatever it accepts must survive a
// re-encoding unchanged (a keyed Publish body both as its positional twin
// and keyed again) and must read the same with the reference msgpack
// library.
func FuzzDecodeCommand(f *testing.F) {
	for _, g := range goldenCommands {
		text, err := os.ReadFile(filepath.Join("testdata", "commands", g.file))
		if err != nil {
			f.Fatal(err)
		}
		data, err := hex.DecodeString(strings.TrimSpace(string(text)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, g := range goldenKeyed {
		f.Add(keyedOf(g.cmd))
	}
	f.Add(keyedExtension())
	f.Add([]byte{})
	f.Add([]byte{byte(CmdPublish)})
	f.Add([]byte{byte(CmdPublish), 0x93, 0xc0, 0x01, 0x91, 0xc0})
	f.Add([]byte{byte(CmdPublish), 0x93, 0xa1, 'a', 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{byte(IgnorableFlag | 0x11), 0x90})
	f.Add([]byte{byte(CmdInitGroup), 0x93, 0xc4, 0x01, 'g', 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte{byte(CmdPeerGroup), 0x93, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff})
	f.Add([]byte{byte(CmdPeerGroup | IgnorableFlag), 0x93, 0x02, 0xd9, 0x01, 'g', 0xcc, 0x05})
	f.Add([]byte{byte(CmdConsumed), 0x94, 0xc0, 0xc4, 0x01, 'r', 0xcd, 0x00, 0x01, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{byte(CmdConsumed | IgnorableFlag), 0x94, 0xa1, 'a', 0xa1, 'r', 0xff, 0x00})
	f.Add([]byte{byte(CmdConsumed), 0xdc, 0x00, 0x04, 0xa1, 'a', 0xda, 0x00, 0x01, 'r', 0xcf, 0, 0, 0, 0, 0, 0, 0, 0, 0xd0, 0x01})
	f.Add([]byte{byte(CmdTrim), 0x94, 0xc0, 0xcd, 0x00, 0x01, 0xc4, 0x01, 'b', 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{byte(CmdTrim | IgnorableFlag), 0x94, 0xa1, 'a', 0x00, 0xc0, 0xff})
	f.Add([]byte{byte(CmdTrim), 0xdd, 0x00, 0x00, 0x00, 0x04, 0xa1, 'a', 0xcf, 0, 0, 0, 0, 0, 0, 0, 0x07, 0xdb, 0, 0, 0, 0x03, 'a', 'g', 'e', 0xd1, 0xff, 0x00})
	f.Add([]byte{byte(CmdExpireSession), 0x93, 0xc0, 0xc4, 0x01, 's', 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{byte(CmdExpireSession | IgnorableFlag), 0x93, 0xa1, 'a', 0xa0, 0xff})
	f.Add([]byte{byte(CmdExpireSession), 0xdc, 0x00, 0x03, 0xd9, 0x01, 'a', 0xda, 0x00, 0x01, 's', 0xcc, 0x05})
	f.Add([]byte{byte(CmdExpireSession), 0x93, 0xa1, 'a', 0xa1, 's', 0xcf, 0, 0, 0, 0, 0, 0, 0, 0x01})
	f.Add([]byte{byte(CmdRegisterReceiver), 0x95, 0xa1, 'a', 0xc4, 0x01, 'r', 0xa1, 's', 0xc3, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{byte(CmdRegisterReceiver | IgnorableFlag), 0x95, 0xa1, 'a', 0xa1, 'r', 0xa0, 0xc2, 0x00})
	f.Add([]byte{byte(CmdExpireReceiver), 0x94, 0xc0, 0xa1, 'r', 0xa1, 's', 0xcc, 0x05})
	f.Add([]byte{byte(CmdForgetReceiver), 0xdc, 0x00, 0x04, 0xa1, 'a', 0xa1, 'r', 0xda, 0x00, 0x01, 's', 0x00})
	f.Add([]byte{byte(CmdRegisterPaced), 0x94, 0xa1, 'a', 0xa1, 's', 0xcc, 0xff, 0x00})
	f.Add([]byte{byte(CmdRegisterPaced), 0x94, 0xa1, 'a', 0xa1, 's', 0xcd, 0x00, 0x02, 0x00})

	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := DecodeCommand(data)
		if err != nil {
			if cmd != nil {
				t.Fatalf("value %+v returned with error %v", cmd, err)
			}
			return
		}
		again, err := DecodeCommand(encode(cmd))
		if err != nil {
			t.Fatalf("re-encoding of accepted %+v does not decode: %v", cmd, err)
		}
		if !commandsEqual(cmd, again) {
			t.Fatalf("re-encoding changed %+v into %+v", cmd, again)
		}
		if CommandType(data[0])&^IgnorableFlag == CmdPublishKeyed {
			again, err := DecodeCommand(keyedOf(cmd))
			if err != nil || !commandsEqual(cmd, again) {
				t.Fatalf("keyed re-encoding changed %+v into %+v (%v)", cmd, again, err)
			}
		}
		lib, err := libRead(data, cmd)
		if err != nil {
			t.Fatalf("accepted %x, which the msgpack library check refuses: %v", data, err)
		}
		if !commandsEqual(cmd, lib) {
			t.Fatalf("%x: we read %+v, the msgpack library reads %+v", data, cmd, lib)
		}
	})
}

// libRead reads data, which DecodeCommand read as cmd, with the reference
// msgpack library, into the value DecodeCommand should have returned.
func libRead(data []byte, cmd any) (lib any, err error) {
	if CommandType(data[0])&^IgnorableFlag == CmdPublishKeyed {
		var v libPublishKeyed
		err = msgpack.Unmarshal(data[1:], &v)
		return v.value(), err
	}
	switch cmd.(type) {
	case InitGroup:
		var v libInitGroup
		err, lib = msgpack.Unmarshal(data[1:], &v), InitGroup{v.GroupID, v.Index, v.UnixNano}
	case Register:
		var v libRegister
		err, lib = msgpack.Unmarshal(data[1:], &v), Register{v.Source, v.Session, v.UnixNano}
	case Publish:
		if CommandType(data[0])&^IgnorableFlag == CmdPublishChecksums {
			var v libPublishSums
			err = msgpack.Unmarshal(data[1:], &v)
			lib = Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads, Checksums: sumsOf(v.Checksums)}
			break
		}
		var v libPublish
		err, lib = msgpack.Unmarshal(data[1:], &v), Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads}
	case PublishAs:
		if CommandType(data[0])&^IgnorableFlag == CmdPublishAsChecksums {
			var v libPublishAsSums
			err = msgpack.Unmarshal(data[1:], &v)
			lib = PublishAs{v.Session, Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads, Checksums: sumsOf(v.Checksums)}}
			break
		}
		var v libPublishAs
		err, lib = msgpack.Unmarshal(data[1:], &v), PublishAs{v.Session, Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads}}
	case PeerGroup:
		var v libPeerGroup
		err, lib = msgpack.Unmarshal(data[1:], &v), PeerGroup{v.Index, v.GroupID, v.UnixNano}
	case Consumed:
		var v libConsumed
		err, lib = msgpack.Unmarshal(data[1:], &v), Consumed{v.Source, v.Receiver, v.Seq, v.UnixNano}
	case Trim:
		var v libTrim
		err, lib = msgpack.Unmarshal(data[1:], &v), Trim{v.Source, v.Through, v.Reason, v.UnixNano}
	case ExpireSession:
		var v libExpireSession
		err, lib = msgpack.Unmarshal(data[1:], &v), ExpireSession{v.Source, v.Session, v.UnixNano}
	case RegisterReceiver:
		var v libRegisterReceiver
		err, lib = msgpack.Unmarshal(data[1:], &v), RegisterReceiver{v.Source, v.Receiver, v.Session, v.Paced, v.UnixNano}
	case ExpireReceiver:
		var v libReceiverSession
		err, lib = msgpack.Unmarshal(data[1:], &v), ExpireReceiver{v.Source, v.Receiver, v.Session, v.UnixNano}
	case ForgetReceiver:
		var v libReceiverSession
		err, lib = msgpack.Unmarshal(data[1:], &v), ForgetReceiver{v.Source, v.Receiver, v.Session, v.UnixNano}
	case RegisterPaced:
		var v libRegisterPaced
		err, lib = msgpack.Unmarshal(data[1:], &v), RegisterPaced{Register{Source: v.Source, Session: v.Session, UnixNano: v.UnixNano}, Pacing(v.Pacing)}
	case Unpublished:
		var v libUnpublished
		err, lib = msgpack.Unmarshal(data[1:], &v), Unpublished{v.Source, v.Session, v.From, v.To}
	case ActiveLevel:
		var v libActiveLevel
		err, lib = msgpack.Unmarshal(data[1:], &v), ActiveLevel{v.Level}
	case ForgetSource:
		var v libForgetSource
		err, lib = msgpack.Unmarshal(data[1:], &v), ForgetSource{v.Source, v.Session}
	case MemberAddress:
		var v libMemberAddress
		err, lib = msgpack.Unmarshal(data[1:], &v), MemberAddress{v.Name, v.RaftAddr, v.ClientAddr, v.UnixNano}
	default:
		return nil, fmt.Errorf("no msgpack library check for %T", cmd)
	}
	return lib, err
}

type libMemberAddress struct {
	_msgpack   struct{} `msgpack:",as_array"`
	Name       string
	RaftAddr   string
	ClientAddr string
	UnixNano   int64
}
