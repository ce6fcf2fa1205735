// Copies between the codec's EncodedPayload / PayloadView and the wire's
// entrograd.v1.SparsePayload. Private to entrograd (client and aggregator).
#ifndef ENTROGRAD_WIRE_PAYLOAD_PROTO_H_
#define ENTROGRAD_WIRE_PAYLOAD_PROTO_H_

#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd {

// Writes every wire field of `payload` into *proto (replacing its contents).
void PayloadToProto(const EncodedPayload& payload, v1::SparsePayload* proto);

// A view of the proto's fields for DecodePayload; borrows the proto's bytes,
// which must outlive the view.
PayloadView PayloadViewOfProto(const v1::SparsePayload& proto);

}  // namespace entrograd

#endif  // ENTROGRAD_WIRE_PAYLOAD_PROTO_H_
