#!/usr/bin/python3
"""Writes the committed seed corpora of tests/fuzz (run once; the files are
in the repository). Payload seeds are valid SparsePayload messages in every
index encoding and value type; npy seeds are small valid and broken .npy
files; job_registry seeds are streams of WorkerMessages in the harness's
framing (2-byte stream id + 4-byte length + serialized message)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, wire, payload):
    key = varint((number << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def gap_range(indices):
    """INDEX_ENCODING_GAP_RANGE bytes (the format is in aggregator.proto): each
    gap v >= 1 as b = floor(log2 v) down a 5-level adaptive bit tree, then v's
    b bits below its leading one at 1/2, through LZMA's range coder. The
    coder's low end is one unbounded integer, so carries need no cache."""
    if not indices:
        return b""
    low, rng, shifts = 0, 0xFFFFFFFF, 0
    prob = [1024] * 32  # P(0) of bit-tree node n (root 1, children 2n, 2n+1)

    def normalize():
        nonlocal low, rng, shifts
        while rng < 1 << 24:
            low, rng, shifts = low << 8, rng << 8, shifts + 1

    def tree_bit(node, bit):
        nonlocal low, rng
        bound = (rng >> 11) * prob[node]
        if bit:
            low, rng = low + bound, rng - bound
            prob[node] -= prob[node] >> 4
        else:
            rng = bound
            prob[node] += (2048 - prob[node]) >> 4
        normalize()

    def direct_bit(bit):
        nonlocal low, rng
        rng >>= 1
        if bit:
            low += rng
        normalize()

    prev = -1
    for i in indices:
        v = i - prev
        b = v.bit_length() - 1
        node = 1
        for level in (4, 3, 2, 1, 0):
            bit = (b >> level) & 1
            tree_bit(node, bit)
            node = 2 * node + bit
        for k in reversed(range(b)):
            direct_bit((v >> k) & 1)
        prev = i
    # 4 flush bytes; LZMA's always-zero first byte (above them) is left out.
    return low.to_bytes(shifts + 4, "big")


def sparse_payload(numel, indices, values, encoding, value_type=1):
    if encoding == 1:
        index_bytes = b"".join(struct.pack("<I", i) for i in indices)
    elif encoding == 2:
        index_bytes, prev = b"", -1
        for i in indices:
            index_bytes += varint(i - prev - 1)
            prev = i
    elif encoding == 3:
        bits = bytearray((numel + 7) // 8)
        for i in indices:
            bits[i // 8] |= 1 << (i % 8)
        index_bytes = bytes(bits)
    elif encoding == 5:
        index_bytes = gap_range(indices)
    else:
        index_bytes = b""
    if value_type == 1:
        value_bytes = b"".join(struct.pack("<f", v) for v in values)
    elif value_type == 4:  # e5m2: the top byte of the f16 (exact for these values)
        value_bytes = b"".join(struct.pack("<e", v)[1:] for v in values)
    else:  # f16 / bf16: two bytes each
        value_bytes = b"".join(struct.pack("<e", v) for v in values)
    return (field(1, 0, numel) + field(2, 0, len(values)) + field(3, 0, encoding) +
            field(4, 0, value_type) + field(5, 2, index_bytes) + field(6, 2, value_bytes))


def write(corpus, name, data):
    path = os.path.join(HERE, "corpus", corpus)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)


def main():
    idx = [0, 3, 17, 99]
    vals = [0.5, -1.25, 3.0, 1e-3]
    for enc in (1, 2, 3, 5):
        write("payload_decode", f"f32_enc{enc}", sparse_payload(100, idx, vals, enc))
        write("payload_decode", f"f16_enc{enc}", sparse_payload(100, idx, vals, enc, 2))
    for enc in (2, 5):
        write("payload_decode", f"e5m2_enc{enc}",
              sparse_payload(100, idx, [0.5, -1.25, 3.0, 1.5], enc, 4))
    write("payload_decode", "dense", sparse_payload(4, [], vals, 4))

    def npy(descr, shape, data, version=1):
        header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
        pre = 10 if version == 1 else 12
        pad = (64 - (pre + len(header) + 1) % 64) % 64
        header = header + " " * pad + "\n"
        length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
        return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + data

    floats = struct.pack("<4f", *vals)
    write("npy_reader", "f4_1d", npy("<f4", "(4,)", floats))
    write("npy_reader", "f4_2d_v2", npy("<f4", "(2, 2)", floats, 2))
    write("npy_reader", "f8", npy("<f8", "(2,)", struct.pack("<2d", 1.0, 2.0)))
    write("npy_reader", "truncated", npy("<f4", "(8,)", floats))

    def join(job, rank, world, layers, incarnation=1):
        body = field(1, 2, job.encode()) + field(2, 0, rank) + field(3, 0, world)
        body += field(4, 0, incarnation)
        for name, numel in layers:
            body += field(5, 2, field(1, 2, name.encode()) + field(2, 0, numel))
        return field(1, 2, body)  # WorkerMessage.join

    def update(step, layer, payload):
        return field(2, 2, field(1, 0, step) + field(2, 0, layer) + field(3, 2, payload))

    def frame(stream, message):
        return struct.pack("<HI", stream, len(message)) + message

    def leave(stream):
        return struct.pack("<HI", stream | 0x8000, 0)

    layers = [("a", 100), ("b", 8)]
    seed = (frame(0, join("job", 0, 2, layers)) + frame(1, join("job", 1, 2, layers)) +
            frame(0, update(0, 0, sparse_payload(100, idx, vals, 2))) +
            frame(1, update(0, 0, sparse_payload(100, [1, 3], [1.0, 2.0], 1))))
    write("job_registry", "two_ranks_one_round", seed)
    write("job_registry", "leave_and_rejoin_smaller",
          seed + leave(0) + leave(1) + frame(2, join("job", 0, 1, layers, 2)) +
          frame(2, update(1, 1, sparse_payload(8, [0, 7], [1.0, -1.0], 3))))


if __name__ == "__main__":
    main()
