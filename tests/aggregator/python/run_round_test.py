#!/usr/bin/python3
"""Cross-language test: drives entrograd-aggregator from Python.

Shows the entrograd.v1 protocol is usable with nothing but Debian's
python3-grpcio and the stubs protoc generates from the .proto files: the
payload codecs (RAW_U32 / DELTA_VARINT / GAP_RANGE encoders; decoders for all
five index encodings and the three value types) and the merge reference are
written here from the proto's documentation, not taken from the C++ code.

  /usr/bin/python3 run_round_test.py --aggregator PATH --stubs GEN_DIR [unittest args]

GEN_DIR holds entrograd/v1/aggregator_pb2{,_grpc}.py and health_pb2{,_grpc}.py
(target entrograd_aggregator_python_stubs). Exits 77 (ctest: skipped) when
this interpreter lacks grpc or protobuf, or the gRPC stubs could not be
generated.

Checks:
  * a full job of 3 ranks and 2 layers over 3 steps, one stream per rank,
    driven concurrently; updates sent RAW_U32 + F32 and DELTA_VARINT + F32;
    every MergedLayer decoded (whatever index encoding the shard chose) and
    compared bitwise with a float32 reference (sum in ascending rank order,
    then / W), the chosen encoding being the one with the fewest wire bytes;
  * the same job with GAP_RANGE updates and every rank listing GAP_RANGE in
    Join.accepted_index_encodings: the shard answers GAP_RANGE where it
    beats a DELTA_VARINT winner, in the very bytes this file's encoder
    writes; with one rank not listing it, never GAP_RANGE;
  * an update with an index >= numel gets a RoundError INVALID_ARGUMENT on
    its own stream only, and changes nothing;
  * grpc.health.v1 Check answers SERVING.
"""

import argparse
import os
import queue
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from concurrent import futures

SKIP_RETURN_CODE = 77


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aggregator", required=True,
                        help="path of the entrograd-aggregator binary")
    parser.add_argument("--stubs", required=True,
                        help="directory of the generated Python stubs")
    return parser.parse_known_args()


ARGS, UNITTEST_ARGV = _parse_args()


def _skip(reason):
    print(f"SKIPPED aggregator_python_client_test: {reason}", file=sys.stderr)
    sys.exit(SKIP_RETURN_CODE)


try:
    import grpc
except ImportError as error:
    _skip(f"{sys.executable} cannot import grpc ({error}); "
          "install python3-grpcio")
try:
    import google.protobuf  # noqa: F401
except ImportError as error:
    _skip(f"{sys.executable} cannot import google.protobuf ({error}); "
          "install python3-protobuf")

_STUB_FILES = ["entrograd/v1/aggregator_pb2.py", "health_pb2.py"]
_GRPC_STUB_FILES = ["entrograd/v1/aggregator_pb2_grpc.py", "health_pb2_grpc.py"]
for _name in _STUB_FILES:
    if not os.path.isfile(os.path.join(ARGS.stubs, _name)):
        print(f"FAILED: {_name} not found under --stubs={ARGS.stubs}; build "
              "the target entrograd_aggregator_python_stubs first",
              file=sys.stderr)
        sys.exit(1)
for _name in _GRPC_STUB_FILES:
    if not os.path.isfile(os.path.join(ARGS.stubs, _name)):
        _skip(f"{_name} was not generated under {ARGS.stubs} (neither "
              "/usr/bin/grpc_python_plugin nor grpc_tools was available at "
              "configure time)")

sys.path.insert(0, ARGS.stubs)
from entrograd.v1 import aggregator_pb2 as pb  # noqa: E402
from entrograd.v1 import aggregator_pb2_grpc as pb_grpc  # noqa: E402
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402

try:  # optional: a second, independent float32 reference
    import numpy
except ImportError:
    numpy = None

STARTUP_TIMEOUT_S = 30.0   # for the "serving on port" line
STOP_TIMEOUT_S = 30.0      # SIGTERM -> exit
STREAM_TIMEOUT_S = 60.0    # deadline of each Exchange stream
RECV_TIMEOUT_S = 20.0      # longest wait for one message (> round timeout)
UNARY_TIMEOUT_S = 10.0     # deadline of each unary RPC
CHANNEL_OPTIONS = [("grpc.enable_http_proxy", 0)]

INVALID_ARGUMENT = 3  # google.rpc.Code
assert grpc.StatusCode.INVALID_ARGUMENT.value[0] == INVALID_ARGUMENT

RAW_U32 = pb.INDEX_ENCODING_RAW_U32
DELTA_VARINT = pb.INDEX_ENCODING_DELTA_VARINT
BITMAP = pb.INDEX_ENCODING_BITMAP
DENSE = pb.INDEX_ENCODING_DENSE
GAP_RANGE = pb.INDEX_ENCODING_GAP_RANGE
F32 = pb.VALUE_TYPE_F32
F16 = pb.VALUE_TYPE_F16
BF16 = pb.VALUE_TYPE_BF16

# ---------------------------------------------------------------------------
# float32 helpers. A Python float holding a float32 value is exact; the sum
# or quotient of two such values computed in double and rounded once to
# float32 equals the float32 operation (double has > 2*24+2 bits), so the
# reference below is exact float32 arithmetic.

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def f32(x):
    """Rounds x to the nearest float32 (ties to even)."""
    return _F32.unpack(_F32.pack(x))[0]


def f32_bits(x):
    return _U32.unpack(_F32.pack(x))[0]


def bits_f32(bits):
    return _F32.unpack(_U32.pack(bits))[0]


# ---------------------------------------------------------------------------
# Payload codec, per the comments of entrograd.v1.SparsePayload.

def encode_raw_u32(indices):
    return struct.pack(f"<{len(indices)}I", *indices)


def _append_leb128(value, out):
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def encode_delta_varint(indices):
    out = bytearray()
    previous = None
    for index in indices:
        gap = index if previous is None else index - previous - 1
        if gap < 0:
            raise ValueError("indices must be strictly ascending")
        _append_leb128(gap, out)
        previous = index
    return bytes(out)


# GAP_RANGE (see INDEX_ENCODING_GAP_RANGE): the gaps v = index - previous
# (previous = -1 first) range coded as a 5-level bit tree for
# b = floor(log2 v) with adaptive probabilities, then v's b bits below its
# leading one at probability 1/2, through LZMA's range coder.

_GR_PROBABILITY_BITS = 11
_GR_PROBABILITY_ONE = 1 << _GR_PROBABILITY_BITS
_GR_ADAPT_SHIFT = 4
_GR_TOP = 1 << 24  # renormalise while the range is below this
_GR_BUCKET_LEVELS = 5  # b in [0, 31]


def _gr_fresh_model():
    """P(0) of each bit-tree node (1 is the root, n's children 2n, 2n+1)."""
    return [_GR_PROBABILITY_ONE // 2] * (1 << _GR_BUCKET_LEVELS)


def _gr_adapt(model, node, bit):
    if bit:
        model[node] -= model[node] >> _GR_ADAPT_SHIFT
    else:
        model[node] += (_GR_PROBABILITY_ONE - model[node]) >> _GR_ADAPT_SHIFT


class _GapRangeEncoder:
    """LZMA's range encoder with its low end kept as one unbounded integer:
    a carry then simply propagates, where LZMA holds back 0xFF bytes in a
    cache. The stream is that integer's bytes after the 4-byte flush; the
    byte above them, LZMA's always-zero first output byte, is left out."""

    def __init__(self):
        self.low = 0
        self.range = 0xFFFFFFFF
        self.shifts = 0  # renormalisations, one output byte each

    def encode_bit(self, model, node, bit):
        bound = (self.range >> _GR_PROBABILITY_BITS) * model[node]
        if bit:
            self.low += bound
            self.range -= bound
        else:
            self.range = bound
        _gr_adapt(model, node, bit)
        self._normalize()

    def encode_direct_bits(self, value, count):
        for shift in reversed(range(count)):
            self.range >>= 1
            if (value >> shift) & 1:
                self.low += self.range
            self._normalize()

    def _normalize(self):
        while self.range < _GR_TOP:
            self.range <<= 8
            self.low <<= 8
            self.shifts += 1

    def finish(self):
        # to_bytes raises OverflowError if the left-out byte were not zero.
        return self.low.to_bytes(self.shifts + 4, "big")


def encode_gap_range(indices):
    """GAP_RANGE index bytes of strictly ascending indices; none for none."""
    if not indices:
        return b""
    encoder = _GapRangeEncoder()
    model = _gr_fresh_model()
    previous = -1
    for index in indices:
        gap = index - previous
        if gap < 1:
            raise ValueError("indices must be strictly ascending")
        bucket = gap.bit_length() - 1
        node = 1
        for level in reversed(range(_GR_BUCKET_LEVELS)):
            bit = (bucket >> level) & 1
            encoder.encode_bit(model, node, bit)
            node = 2 * node + bit
        encoder.encode_direct_bits(gap, bucket)
        previous = index
    return encoder.finish()


class _GapRangeDecoder:
    """Reads what _GapRangeEncoder wrote; raises ValueError on reading past
    the end."""

    def __init__(self, data):
        if len(data) < 4:
            raise ValueError(f"GAP_RANGE: truncated: {len(data)} bytes, "
                             "fewer than the 4 of the first code word")
        self.data = data
        self.position = 4
        self.code = int.from_bytes(data[:4], "big")
        self.range = 0xFFFFFFFF

    def decode_bit(self, model, node):
        bound = (self.range >> _GR_PROBABILITY_BITS) * model[node]
        bit = int(self.code >= bound)
        if bit:
            self.code -= bound
            self.range -= bound
        else:
            self.range = bound
        _gr_adapt(model, node, bit)
        self._normalize()
        return bit

    def decode_direct_bits(self, count):
        value = 0
        for _ in range(count):
            self.range >>= 1
            bit = int(self.code >= self.range)
            if bit:
                self.code -= self.range
            value = 2 * value + bit
            self._normalize()
        return value

    def _normalize(self):
        while self.range < _GR_TOP:
            if self.position >= len(self.data):
                raise ValueError(f"GAP_RANGE: truncated: the stream needs "
                                 f"more than its {len(self.data)} bytes")
            self.range <<= 8
            # 32 bits, as the coder's code register: only a corrupt stream
            # ever has bits above them.
            self.code = ((self.code << 8) | self.data[self.position]) \
                & 0xFFFFFFFF
            self.position += 1


def decode_gap_range(numel, count, data):
    """Exactly `count` indices, each < numel, from exactly all of `data`."""
    if count == 0:
        if data:
            raise ValueError(f"GAP_RANGE: {len(data)} bytes for count 0")
        return []
    decoder = _GapRangeDecoder(data)
    model = _gr_fresh_model()
    indices = []
    previous = -1
    for j in range(count):
        node = 1
        for _ in range(_GR_BUCKET_LEVELS):
            node = 2 * node + decoder.decode_bit(model, node)
        bucket = node - (1 << _GR_BUCKET_LEVELS)
        gap = (1 << bucket) | decoder.decode_direct_bits(bucket)
        index = previous + gap
        if index >= numel:
            raise ValueError(f"GAP_RANGE: index {index} at {j} is >= numel "
                             f"{numel}")
        indices.append(index)
        previous = index
    if decoder.position != len(data):
        raise ValueError(f"GAP_RANGE: trailing bytes: count {count} ends at "
                         f"byte {decoder.position} of {len(data)}")
    # The flush writes the coder's low end exactly, so an encoder's stream
    # ends with code 0; any other ending is not the encoder's bytes.
    if decoder.code != 0:
        raise ValueError(f"GAP_RANGE: not the encoder's stream: final code "
                         f"{decoder.code}, expected 0")
    return indices


def encode_f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def make_payload(numel, indices, values, index_encoding):
    """A SparsePayload carrying float32 `values` at `indices`."""
    if index_encoding == RAW_U32:
        index_bytes = encode_raw_u32(indices)
    elif index_encoding == DELTA_VARINT:
        index_bytes = encode_delta_varint(indices)
    elif index_encoding == GAP_RANGE:
        index_bytes = encode_gap_range(indices)
    else:
        raise ValueError(f"no encoder for index encoding {index_encoding}")
    return pb.SparsePayload(numel=numel, count=len(indices),
                            index_encoding=index_encoding, value_type=F32,
                            index_bytes=index_bytes,
                            value_bytes=encode_f32(values))


def varint_length(value):
    length = 1
    while value >= 0x80:
        value >>= 7
        length += 1
    return length


def _decode_indices(payload):
    """The payload's indices (validated), or range(numel) for DENSE."""
    numel, count, data = payload.numel, payload.count, payload.index_bytes
    encoding = payload.index_encoding
    if encoding == DENSE:
        if data or count != numel:
            raise ValueError(f"DENSE with {len(data)} index bytes, count "
                             f"{count}, numel {numel}")
        return range(numel)
    if encoding == RAW_U32:
        if len(data) != 4 * count:
            raise ValueError(f"RAW_U32: {len(data)} index bytes for {count}")
        indices = list(struct.unpack(f"<{count}I", data))
    elif encoding == DELTA_VARINT:
        indices = []
        position = 0
        previous = None
        while position < len(data):
            value = 0
            shift = 0
            while True:
                if position >= len(data):
                    raise ValueError("DELTA_VARINT: truncated varint")
                byte = data[position]
                position += 1
                value |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            index = value if previous is None else previous + 1 + value
            indices.append(index)
            previous = index
        if len(indices) != count:
            raise ValueError(f"DELTA_VARINT: {len(indices)} varints for "
                             f"count {count}")
    elif encoding == BITMAP:
        if len(data) != (numel + 7) // 8:
            raise ValueError(f"BITMAP: {len(data)} bytes for numel {numel}")
        indices = []
        for byte_index, byte in enumerate(data):
            bit = 0
            while byte:
                if byte & 1:
                    indices.append(8 * byte_index + bit)
                byte >>= 1
                bit += 1
        if len(indices) != count:
            raise ValueError(f"BITMAP: popcount {len(indices)} != {count}")
    elif encoding == GAP_RANGE:
        indices = decode_gap_range(numel, count, data)
    else:
        raise ValueError(f"unknown index encoding {encoding}")
    for j, index in enumerate(indices):
        if index >= numel:
            raise ValueError(f"index {index} at {j} is >= numel {numel}")
        if j and index <= indices[j - 1]:
            raise ValueError(f"indices not strictly ascending at {j}")
    return indices


def _decode_values(payload, count):
    data = payload.value_bytes
    if payload.value_type == F32:
        width, unpack = 4, lambda d: struct.unpack(f"<{count}f", d)
    elif payload.value_type == F16:
        width, unpack = 2, lambda d: struct.unpack(f"<{count}e", d)
    elif payload.value_type == BF16:
        width = 2

        def unpack(d):
            return [bits_f32(h << 16) for h in struct.unpack(f"<{count}H", d)]
    else:
        raise ValueError(f"unknown value type {payload.value_type}")
    if len(data) != width * count:
        raise ValueError(f"{len(data)} value bytes for {count} values")
    return list(unpack(data))


def decode_payload(payload):
    """(indices, values) of any SparsePayload; DENSE gives every index."""
    indices = _decode_indices(payload)
    values = _decode_values(payload, len(indices))
    return indices, values


def smallest_encoding(numel, indices, gap_range_accepted=False):
    """The index encoding with the fewest wire bytes (index + f32 values),
    ties broken in the order RAW_U32, DELTA_VARINT, BITMAP, DENSE; then
    GAP_RANGE instead of a DELTA_VARINT winner that it strictly beats, when
    every rank accepts it (the shard costs GAP_RANGE only there)."""
    value_bytes = 4 * len(indices)
    delta_bytes = 0
    previous = None
    for index in indices:
        delta_bytes += varint_length(index if previous is None
                                     else index - previous - 1)
        previous = index
    sizes = [(RAW_U32, 4 * len(indices) + value_bytes),
             (DELTA_VARINT, delta_bytes + value_bytes),
             (BITMAP, (numel + 7) // 8 + value_bytes),
             (DENSE, 4 * numel)]
    best, best_bytes = min(sizes, key=lambda pair: pair[1])
    if (gap_range_accepted and best == DELTA_VARINT and
            len(encode_gap_range(indices)) + value_bytes < best_bytes):
        return GAP_RANGE
    return best


# ---------------------------------------------------------------------------
# The merge reference: merged[i] = (sum over ranks, ascending, of value_r[i])
# / W in float32, over the union of the ranks' indices.

def reference_merge(contributions):
    """contributions[r] = (indices, values) of rank r -> {index: value}."""
    world_size = len(contributions)
    sums = {}
    for indices, values in contributions:  # ascending rank order
        for index, value in zip(indices, values):
            sums[index] = value if index not in sums else f32(sums[index] + value)
    return {index: f32(sums[index] / float(world_size))
            for index in sorted(sums)}


def reference_merge_numpy(contributions):
    world_size = numpy.float32(len(contributions))
    sums = {}
    for indices, values in contributions:
        for index, value in zip(indices, values):
            value = numpy.float32(value)
            sums[index] = (value if index not in sums
                           else numpy.float32(sums[index] + value))
    return {index: float(numpy.float32(sums[index] / world_size))
            for index in sorted(sums)}


# ---------------------------------------------------------------------------
# Test data.

JOB_LAYERS = [("fc.weight", 1000), ("embed.weight", 6_500_000)]
WORLD_SIZE = 3
STEPS = [0, 1, 2]
PARAMS_HASH = 0x9E3779B97F4A7C15  # any value, the same for every rank


def _random_value(rng):
    return f32(rng.uniform(-1.0, 1.0) * 2.0 ** rng.randint(-30, 20))


def _contribution(rng, indices, fixed=None):
    """(sorted indices, float32 values); `fixed` maps index -> value."""
    fixed = fixed or {}
    indices = sorted(set(indices) | set(fixed))
    return indices, [fixed[i] if i in fixed else _random_value(rng)
                     for i in indices]


def build_rounds(seed=20240611):
    """{(step, layer): [rank 0's (indices, values), rank 1's, rank 2's]}.

    Chosen so that the merged updates come back in all four index
    encodings: step 0 BITMAP / DELTA_VARINT, step 1 DENSE (the ranks cover
    every element of layer 0) / RAW_U32 (gaps >= 2^21 make every varint 4
    bytes: a tie, which RAW_U32 wins), step 2 BITMAP / DELTA_VARINT.
    """
    rng = random.Random(seed)
    n0, n1 = JOB_LAYERS[0][1], JOB_LAYERS[1][1]
    rounds = {}
    rounds[(0, 0)] = [_contribution(rng, rng.sample(range(n0), 120))
                      for _ in range(WORLD_SIZE)]
    rounds[(0, 1)] = [_contribution(rng, rng.sample(range(60_000), 25))
                      for _ in range(WORLD_SIZE)]
    rounds[(1, 0)] = [_contribution(rng, range(0, 450)),
                      _contribution(rng, range(300, 750)),
                      _contribution(rng, range(600, n0))]
    rounds[(1, 1)] = [_contribution(rng, [2_100_000]),
                      _contribution(rng, [2_100_000, 4_200_000]),
                      _contribution(rng, [4_200_000, 6_300_000])]
    # Step 2, layer 0: values where the order of the float32 additions or
    # the sign of zero shows.
    tiny = bits_f32(1)  # smallest subnormal
    special = [
        {0: 1e8, 2: 0.0, 3: tiny, 4: 1.0, 6: 3e38},
        {0: 1.0, 1: -0.0, 3: tiny, 4: 2.0 ** -24, 6: -3e38},
        {0: -1e8, 2: -0.0, 3: tiny, 4: 2.0 ** -24, 5: 1.0, 6: 3e38},
    ]
    rounds[(2, 0)] = [
        _contribution(rng, rng.sample(range(7, n0), 150),
                      fixed={i: f32(v) for i, v in special[r].items()})
        for r in range(WORLD_SIZE)]
    rounds[(2, 1)] = [_contribution(rng, rng.sample(range(n1), 15))
                      for _ in range(WORLD_SIZE)]
    return rounds


def update_encoding(rank, step, layer):
    """How `rank` encodes its update: rank 0 RAW_U32, rank 1 DELTA_VARINT,
    rank 2 alternating."""
    if rank == 0:
        return RAW_U32
    if rank == 1:
        return DELTA_VARINT
    return RAW_U32 if (step + layer) % 2 == 0 else DELTA_VARINT


def make_join(job_id, rank, world_size, layers, incarnation=1,
              accepted_index_encodings=()):
    join = pb.Join(job_id=job_id, rank=rank, world_size=world_size,
                   incarnation=incarnation, initial_params_hash=PARAMS_HASH,
                   applied_step=-1, accepted_value_types=[F32],
                   accepted_index_encodings=accepted_index_encodings)
    for name, numel in layers:
        join.layers.add(name=name, numel=numel)
    return pb.WorkerMessage(join=join)


def make_update(step, layer_index, numel, indices, values, encoding,
                applied_step):
    update = pb.LayerUpdate(
        step=step, layer_index=layer_index,
        payload=make_payload(numel, indices, values, encoding),
        entropy=1.0, keep_ratio=len(indices) / numel,
        applied_step=applied_step)
    return pb.WorkerMessage(layer_update=update)


# ---------------------------------------------------------------------------
# Process and stream plumbing.

class AggregatorProcess:
    """entrograd-aggregator as a child process."""

    PORT_LINE = re.compile(
        r"entrograd-aggregator: serving on port (\d+), metrics on port (\d+)")

    def __init__(self, binary):
        self._stderr = tempfile.TemporaryFile()
        self._lines = queue.Queue()
        self.stdout_lines = []
        self.process = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
             "--round_timeout=10s"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=self._stderr, text=True)
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()

    def _read_stdout(self):
        for line in self.process.stdout:
            self.stdout_lines.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def wait_for_ports(self, timeout=STARTUP_TIMEOUT_S):
        """(grpc port, metrics port) from the first stdout line."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(remaining, 0.001))
            except queue.Empty:
                raise AssertionError(
                    f"no 'serving on port' line within {timeout} s; "
                    f"stderr:\n{self.stderr_tail()}") from None
            if line is None:
                raise AssertionError(
                    f"entrograd-aggregator exited ({self.process.wait()}) "
                    f"before serving; stderr:\n{self.stderr_tail()}")
            match = self.PORT_LINE.search(line)
            if match:
                return int(match.group(1)), int(match.group(2))

    def stop(self, timeout=STOP_TIMEOUT_S):
        """SIGTERM, then SIGKILL after `timeout`. Returns (exit code,
        whether it had to be killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        killed = False
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            self.process.kill()
            code = self.process.wait()
        self._reader.join(timeout=5)
        if not self._reader.is_alive():
            self.process.stdout.close()
        return code, killed

    def close(self):
        self._stderr.close()

    def stderr_tail(self, limit=4000):
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace")
        return text[-limit:]


class _Ended:
    def __init__(self, code, details):
        self.code = code
        self.details = details

    def __repr__(self):
        return f"stream ended with {self.code}: {self.details}"


class ExchangeStream:
    """One Exchange call: requests from a queue.Queue through a generator,
    responses read by a thread into another queue."""

    _END = object()

    def __init__(self, stub, name, timeout=STREAM_TIMEOUT_S):
        self.name = name
        self._requests = queue.Queue()
        self._responses = queue.Queue()
        self._call = stub.Exchange(self._request_iterator(), timeout=timeout)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _request_iterator(self):
        while True:
            message = self._requests.get()
            if message is self._END:
                return
            yield message

    def _read(self):
        try:
            for message in self._call:
                self._responses.put(message)
            self._responses.put(_Ended(self._call.code(), self._call.details()))
        except grpc.RpcError as error:
            self._responses.put(_Ended(error.code(), error.details()))

    def send(self, message):
        self._requests.put(message)

    def recv(self, timeout=RECV_TIMEOUT_S):
        try:
            item = self._responses.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"{self.name}: no message within {timeout} s") from None
        if isinstance(item, _Ended):
            raise AssertionError(f"{self.name}: {item!r}")
        return item

    def expect(self, kind, timeout=RECV_TIMEOUT_S):
        message = self.recv(timeout)
        got = message.WhichOneof("kind")
        if got != kind:
            raise AssertionError(
                f"{self.name}: expected {kind}, got {got}: {message}")
        return getattr(message, kind)

    def expect_silence(self, seconds):
        try:
            item = self._responses.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"{self.name}: expected nothing, got {item!r}")

    def finish(self, timeout=RECV_TIMEOUT_S):
        """Half-closes and returns the final _Ended (no message may come)."""
        self._requests.put(self._END)
        try:
            item = self._responses.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"{self.name}: stream not ended within {timeout} s of the "
                "half-close") from None
        if not isinstance(item, _Ended):
            raise AssertionError(f"{self.name}: unexpected message after the "
                                 f"half-close: {item}")
        return item

    def cancel(self):
        self._call.cancel()
        self._requests.put(self._END)  # unblock gRPC's request consumer


# ---------------------------------------------------------------------------

class AggregatorPythonClientTest(unittest.TestCase):

    def setUp(self):
        self.aggregator = AggregatorProcess(ARGS.aggregator)
        self.channel = None
        self.streams = []
        try:
            self.port, self.metrics_port = self.aggregator.wait_for_ports()
            self.assertGreater(self.port, 0)
            self.assertGreater(self.metrics_port, 0)
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}",
                                                 options=CHANNEL_OPTIONS)
            grpc.channel_ready_future(self.channel).result(
                timeout=UNARY_TIMEOUT_S)
        except BaseException:
            self._cleanup_quietly()
            raise
        self.stub = pb_grpc.AggregatorStub(self.channel)

    def _cleanup_quietly(self):
        if self.channel is not None:
            self.channel.close()
        self.aggregator.stop()
        self.aggregator.close()

    def tearDown(self):
        for stream in self.streams:
            stream.cancel()  # a no-op for streams that ended
        if self.channel is not None:
            self.channel.close()
        code, killed = self.aggregator.stop()
        stderr_tail = self.aggregator.stderr_tail()
        self.aggregator.close()
        self.assertFalse(
            killed, f"entrograd-aggregator ignored SIGTERM for "
            f"{STOP_TIMEOUT_S} s; stderr:\n{stderr_tail}")
        self.assertEqual(
            code, 0, f"entrograd-aggregator exited {code} after SIGTERM; "
            f"stderr:\n{stderr_tail}")

    def open_stream(self, name):
        stream = ExchangeStream(self.stub, name)
        self.streams.append(stream)
        return stream

    def join(self, stream, job_id, rank, world_size, layers,
             accepted_index_encodings=()):
        message = make_join(job_id, rank, world_size, layers,
                            accepted_index_encodings=accepted_index_encodings)
        stream.send(message)
        ack = stream.expect("join_ack")
        self.assertEqual(ack.merged_step, -1, f"{stream.name}: {ack}")
        self.assertGreater(ack.max_message_bytes, 0)
        return ack

    def assert_merged(self, merged, numel, reference, where):
        """`merged` (a MergedLayer's payload) holds exactly `reference`."""
        self.assertEqual(merged.numel, numel, where)
        self.assertEqual(merged.value_type, F32, where)
        indices, values = decode_payload(merged)
        if merged.index_encoding != DENSE:
            self.assertEqual(list(indices), sorted(reference),
                             f"{where}: merged indices are not the union")
        got = dict(zip(indices, values))
        mismatches = []
        for index in sorted(set(got) | set(reference)):
            want = reference.get(index, 0.0)
            have = got.get(index, 0.0)
            if f32_bits(have) != f32_bits(want):
                mismatches.append(f"[{index}] got {have!r} "
                                  f"(0x{f32_bits(have):08x}) want {want!r} "
                                  f"(0x{f32_bits(want):08x})")
        self.assertFalse(mismatches, f"{where}: {len(mismatches)} values "
                         f"differ, first: {mismatches[:5]}")

    # (a) ---------------------------------------------------------------

    def _run_rank(self, stream, job_id, rank, rounds, uplink_encoding,
                  accepted_index_encodings):
        """One worker: Join listing `accepted_index_encodings`, then per step
        both layers' updates, encoded as uplink_encoding(rank, step, layer),
        and both merged layers. Returns {(step, layer): MergedLayer}."""
        self.join(stream, job_id, rank, WORLD_SIZE, JOB_LAYERS,
                  accepted_index_encodings)
        received = {}
        for step in STEPS:
            for layer, (_, numel) in enumerate(JOB_LAYERS):
                indices, values = rounds[(step, layer)][rank]
                stream.send(make_update(step, layer, numel, indices, values,
                                        uplink_encoding(rank, step, layer),
                                        applied_step=step - 1))
            for _ in JOB_LAYERS:
                merged = stream.expect("merged_layer")
                key = (merged.step, merged.layer_index)
                if key in received or merged.step != step:
                    raise AssertionError(f"{stream.name}: unexpected "
                                         f"MergedLayer for {key} at step "
                                         f"{step}")
                received[key] = merged
        ended = stream.finish()
        if ended.code != grpc.StatusCode.OK:
            raise AssertionError(f"{stream.name}: {ended!r}, expected OK")
        return received

    def _run_job(self, job_id, rounds, uplink_encoding, accepted_by_rank):
        """Drives WORLD_SIZE ranks concurrently through `rounds`; rank r's
        Join lists accepted_by_rank[r]. Returns each rank's _run_rank."""
        streams = [self.open_stream(f"{job_id} rank {rank}")
                   for rank in range(WORLD_SIZE)]
        with futures.ThreadPoolExecutor(max_workers=WORLD_SIZE) as pool:
            jobs = [pool.submit(self._run_rank, streams[rank], job_id, rank,
                                rounds, uplink_encoding,
                                accepted_by_rank[rank])
                    for rank in range(WORLD_SIZE)]
            try:
                return [job.result(timeout=STREAM_TIMEOUT_S + 10)
                        for job in jobs]
            except BaseException:
                for stream in streams:
                    stream.cancel()
                raise

    def _check_merged_rounds(self, rounds, by_rank, gap_range_accepted):
        """Every round's MergedLayer: the same bytes to every rank, in the
        encoding smallest_encoding expects, holding the reference values.
        Returns the set of index encodings the shard chose."""
        encodings_seen = set()
        for (step, layer), contributions in sorted(rounds.items()):
            name, numel = JOB_LAYERS[layer]
            where = f"step {step} layer {layer} ({name})"
            reference = reference_merge(contributions)
            if numpy is not None:
                self.assertEqual(
                    {i: f32_bits(v) for i, v in reference.items()},
                    {i: f32_bits(v) for i, v in
                     reference_merge_numpy(contributions).items()},
                    f"{where}: the two Python references disagree")
            merged = [received[(step, layer)] for received in by_rank]
            for rank in range(1, WORLD_SIZE):
                self.assertEqual(merged[rank].SerializeToString(),
                                 merged[0].SerializeToString(),
                                 f"{where}: rank {rank} got other bytes")
            self.assertEqual(merged[0].contributors, WORLD_SIZE, where)
            payload = merged[0].payload
            self.assertEqual(
                pb.IndexEncoding.Name(payload.index_encoding),
                pb.IndexEncoding.Name(smallest_encoding(
                    numel, sorted(reference), gap_range_accepted)),
                f"{where}: not the smallest encoding")
            encodings_seen.add(payload.index_encoding)
            self.assert_merged(payload, numel, reference, where)
            if payload.index_encoding == GAP_RANGE:
                # The shard's C++ coder and this one, byte for byte: the
                # format leaves an encoder no choice.
                self.assertEqual(payload.index_bytes.hex(),
                                 encode_gap_range(sorted(reference)).hex(),
                                 f"{where}: GAP_RANGE bytes differ")
        return encodings_seen

    @staticmethod
    def _rounds_gap_range_would_win(rounds):
        """Rounds whose merged update GAP_RANGE makes smallest, were it
        accepted: where the shard's choice shows whether it was."""
        return [key for key, contributions in sorted(rounds.items())
                if smallest_encoding(JOB_LAYERS[key[1]][1],
                                     sorted(reference_merge(contributions)),
                                     gap_range_accepted=True) == GAP_RANGE]

    def test_three_ranks_full_round_bitwise(self):
        rounds = build_rounds()
        by_rank = self._run_job("py-round", rounds, update_encoding,
                                [()] * WORLD_SIZE)
        encodings_seen = self._check_merged_rounds(rounds, by_rank,
                                                   gap_range_accepted=False)

        # The data is built so that every decoder above was exercised, and
        # so that GAP_RANGE, which no rank listed, would have been smaller.
        self.assertEqual(sorted(map(pb.IndexEncoding.Name, encodings_seen)),
                         sorted(map(pb.IndexEncoding.Name,
                                    [RAW_U32, DELTA_VARINT, BITMAP, DENSE])))
        self.assertTrue(self._rounds_gap_range_would_win(rounds),
                        "no round where GAP_RANGE would be smallest")
        # Spot checks of step 2's crafted values against hand-computed ones.
        step2 = dict(zip(*decode_payload(by_rank[0][(2, 0)].payload)))
        third = f32(1.0 / 3.0)
        self.assertEqual(f32_bits(step2[0]), f32_bits(0.0))  # 1e8+1-1e8
        self.assertEqual(f32_bits(step2[1]), f32_bits(-0.0))
        self.assertEqual(f32_bits(step2[2]), f32_bits(0.0))
        self.assertEqual(f32_bits(step2[3]), 1)
        self.assertEqual(step2[4], third)  # 1 + 2^-24 + 2^-24 == 1 in order
        self.assertEqual(step2[5], third)
        self.assertEqual(step2[6], f32(f32(3e38) / 3.0))

    def test_gap_range_when_every_rank_accepts_it(self):
        rounds = build_rounds()
        by_rank = self._run_job("py-gap-range", rounds,
                                lambda rank, step, layer: GAP_RANGE,
                                [[GAP_RANGE]] * WORLD_SIZE)
        encodings_seen = self._check_merged_rounds(rounds, by_rank,
                                                   gap_range_accepted=True)
        # GAP_RANGE takes exactly the rounds DELTA_VARINT won above.
        self.assertEqual(sorted(map(pb.IndexEncoding.Name, encodings_seen)),
                         sorted(map(pb.IndexEncoding.Name,
                                    [RAW_U32, BITMAP, DENSE, GAP_RANGE])))

    def test_no_gap_range_unless_every_rank_accepts_it(self):
        rounds = build_rounds()
        # Rank 2 does not list it, yet sends it: shards decode everything.
        by_rank = self._run_job("py-gap-range-mixed", rounds,
                                lambda rank, step, layer: GAP_RANGE,
                                [[GAP_RANGE], [GAP_RANGE], []])
        encodings_seen = self._check_merged_rounds(rounds, by_rank,
                                                   gap_range_accepted=False)
        self.assertNotIn(GAP_RANGE, encodings_seen)
        self.assertTrue(self._rounds_gap_range_would_win(rounds),
                        "no round where GAP_RANGE would be smallest")

    # (b) ---------------------------------------------------------------

    def test_malformed_update_gets_round_error_on_its_stream_only(self):
        layers = [("w", 100)]
        numel = layers[0][1]
        good = self.open_stream("rank 0")
        bad = self.open_stream("rank 1")
        self.join(good, "py-malformed", 0, 2, layers)
        self.join(bad, "py-malformed", 1, 2, layers)

        for encoding in (RAW_U32, DELTA_VARINT, GAP_RANGE):
            bad.send(make_update(0, 0, numel, [10, numel], [1.0, 2.0],
                                 encoding, applied_step=-1))
            error = bad.expect("round_error")
            self.assertEqual(error.code, INVALID_ARGUMENT,
                             f"{pb.IndexEncoding.Name(encoding)}: {error}")
            self.assertEqual((error.step, error.layer_index), (0, 0))
            self.assertTrue(error.message)
        good.expect_silence(0.5)

        # The refusals changed nothing: the round completes from the two
        # valid updates, and both streams are still open.
        contributions = [([1, 50, 99], [0.5, -1.25, 3.0]),
                         ([50, 98], [0.25, 7.0])]
        for rank, stream in enumerate((good, bad)):
            indices, values = contributions[rank]
            stream.send(make_update(0, 0, numel, indices, values,
                                    update_encoding(rank, 0, 0),
                                    applied_step=-1))
        reference = reference_merge(contributions)
        merged_good = good.expect("merged_layer")
        merged_bad = bad.expect("merged_layer")
        self.assertEqual(merged_good.SerializeToString(),
                         merged_bad.SerializeToString())
        self.assertEqual(merged_good.contributors, 2)
        self.assert_merged(merged_good.payload, numel, reference,
                           "py-malformed step 0")
        for stream in (good, bad):
            ended = stream.finish()
            self.assertEqual(ended.code, grpc.StatusCode.OK, repr(ended))

    # (c) ---------------------------------------------------------------

    def test_health_check_serving(self):
        health = health_pb2_grpc.HealthStub(self.channel)
        for service in ("", "entrograd.v1.Aggregator"):
            response = health.Check(
                health_pb2.HealthCheckRequest(service=service),
                timeout=UNARY_TIMEOUT_S)
            self.assertEqual(response.status,
                             health_pb2.HealthCheckResponse.SERVING,
                             f"service {service!r}")
        with self.assertRaises(grpc.RpcError) as raised:
            health.Check(health_pb2.HealthCheckRequest(service="no.Such"),
                         timeout=UNARY_TIMEOUT_S)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.NOT_FOUND)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGV, verbosity=2)
