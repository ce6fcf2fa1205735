#include "entrograd/wire/payload_proto.h"

namespace entrograd {

void PayloadToProto(const EncodedPayload& payload, v1::SparsePayload* proto) {
  proto->set_numel(payload.numel);
  proto->set_count(payload.count);
  proto->set_index_encoding(
      static_cast<v1::IndexEncoding>(static_cast<int>(payload.index_encoding)));
  proto->set_value_type(
      static_cast<v1::ValueType>(static_cast<int>(payload.value_type)));
  proto->set_index_bytes(payload.index_bytes);
  proto->set_value_bytes(payload.value_bytes);
}

PayloadView PayloadViewOfProto(const v1::SparsePayload& proto) {
  PayloadView view;
  view.numel = proto.numel();
  view.count = proto.count();
  view.index_encoding = static_cast<int>(proto.index_encoding());
  view.value_type = static_cast<int>(proto.value_type());
  view.index_bytes = proto.index_bytes();
  view.value_bytes = proto.value_bytes();
  return view;
}

}  // namespace entrograd
