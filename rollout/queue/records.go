package queue

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(256<<20))
)

// encodeRecord builds a results message; a record larger than limit bytes
// (0: 256 KiB) is zstd-compressed, so that long episodes fit the server's
// message size.
func encodeRecord(subject string, rec *trajectory.Record, limit int) (*nats.Msg, error) {
	b, err := store.MarshalRecord(rec) // json.Marshal's bytes, faster
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if limit <= 0 {
		limit = 256 << 10
	}
	m := nats.NewMsg(subject)
	m.Header.Set(hdrTraj, rec.TrajID)
	if len(b) > limit {
		b = zenc.EncodeAll(b, nil)
		m.Header.Set(hdrEncoding, "zstd")
	}
	m.Data = b
	return m, nil
}

func decodeRecord(data []byte, h nats.Header) (*trajectory.Record, error) {
	if h.Get(hdrEncoding) == "zstd" {
		var err error
		if data, err = zdec.DecodeAll(data, nil); err != nil {
			return nil, fmt.Errorf("queue: record %s: %w", h.Get(hdrTraj), err)
		}
	}
	var rec trajectory.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("queue: record %s: %w", h.Get(hdrTraj), err)
	}
	if rec.TrajID == "" {
		return nil, fmt.Errorf("queue: a record without traj_id")
	}
	return &rec, nil
}

// admitResult checks a fetched result's signature under the run key and
// decodes its record. A result failing either is terminated (never
// redelivered) and logged under who ("queue", "env collect"); forged says
// the signature refused it (not from a holder of the run key: it cannot
// block the genuine result, whose message id only a key holder computes),
// else the record did not decode. The coordinator and the env collector
// admit results alike.
func admitResult(m jetstream.Msg, runKey, runID string, logw io.Writer, who string) (rec *trajectory.Record, forged bool, ok bool) {
	if !verify(runKey, m.Headers().Get(hdrAuth), resultAuthParts(runID, m)...) {
		fmt.Fprintf(logw, "antidrift: %s: refused a result for %q without the run key (forged, or from another run)\n", who, secret.Text(m.Headers().Get(hdrTraj)))
		_ = m.Term()
		return nil, true, false
	}
	rec, err := decodeRecord(m.Data(), m.Headers())
	if err != nil {
		fmt.Fprintf(logw, "antidrift: %s: refused a result: %v\n", who, err)
		_ = m.Term()
		return nil, false, false
	}
	return rec, false, true
}

// resultAuth authenticates a results message: its run, trajectory id,
// scenario hash and bytes as sent, under the run key.
func resultAuth(key, runID string, m *nats.Msg) string {
	return sign(key, authParts(runID, m.Header, m.Data)...)
}

// resultAuthParts are the signed parts of a received results message.
func resultAuthParts(runID string, m interface {
	Headers() nats.Header
	Data() []byte
}) [][]byte {
	return authParts(runID, m.Headers(), m.Data())
}

func authParts(runID string, h nats.Header, data []byte) [][]byte {
	return [][]byte{[]byte(runID), []byte(h.Get(hdrTraj)), []byte(h.Get(hdrScenarioHash)), []byte(h.Get(hdrEncoding)), data}
}
