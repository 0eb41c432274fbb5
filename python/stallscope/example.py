"""A minimal tf.train.Example decoder (protobuf wire format, no protobuf
package), enough for the records `stallscope pack` writes and for Examples
from TensorFlow itself.

    parse_example(data) -> {"key": [b"cat/1.jpg"], "label": [3], "f": [0.5]}

The messages (tensorflow/core/example/{example,feature}.proto):
    Example  { Features features = 1; }
    Features { map<string, Feature> feature = 1; }   // entries: key = 1, value = 2
    Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                            Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed = true]; }
    Int64List { repeated int64 value = 1 [packed = true]; }
Packed and unpacked repeated scalars are both accepted, unknown fields are
skipped, a message field seen twice is merged, as protobuf parsers do. Each
feature decodes to a list of bytes, of int or of float (an empty Feature to
[]). Malformed input raises ExampleError with the byte offset in the record.
Values are copied out, so `data` may be a memoryview of a reused buffer.
"""

import struct

__all__ = ["ExampleError", "parse_example"]

_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5


class ExampleError(ValueError):
    """Not a valid serialized tf.train.Example."""


def _varint(buf, pos, end):
    """(value, next position) of the varint at pos."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ExampleError("varint runs past the end at byte %d" % pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ExampleError("varint longer than 10 bytes at byte %d" % pos)


def _fields(buf, pos, end):
    """Yields (field number, wire type, value or (start, stop), start) of one
    message in buf[pos:end]; length-delimited values come as a span."""
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ExampleError("field number 0 at byte %d" % start)
        if wire == _VARINT:
            value, pos = _varint(buf, pos, end)
        elif wire == _LENGTH:
            length, pos = _varint(buf, pos, end)
            if length > end - pos:
                raise ExampleError("field %d at byte %d claims %d bytes, %d remain"
                                   % (number, start, length, end - pos))
            value = (pos, pos + length)
            pos += length
        elif wire == _FIXED64:
            if pos + 8 > end:
                raise ExampleError("fixed64 runs past the end at byte %d" % start)
            value = (pos, pos + 8)
            pos += 8
        elif wire == _FIXED32:
            if pos + 4 > end:
                raise ExampleError("fixed32 runs past the end at byte %d" % start)
            value = (pos, pos + 4)
            pos += 4
        else:
            # Groups are deprecated and never appear in an Example.
            raise ExampleError("wire type %d (field %d) at byte %d is not supported"
                               % (wire, number, start))
        yield number, wire, value, start


def _int64(v):
    return v - (1 << 64) if v >> 63 else v


def _feature(buf, pos, end):
    values = []
    kind = None
    for number, wire, value, start in _fields(buf, pos, end):
        if wire != _LENGTH or number not in (1, 2, 3):
            continue                      # unknown field: skipped
        if kind != number:
            values = []                   # oneof: the last kind set wins
            kind = number
        lo, hi = value
        for n, w, v, s in _fields(buf, lo, hi):
            if n != 1:
                continue
            if number == 1:               # BytesList
                if w != _LENGTH:
                    raise ExampleError("bytes_list value with wire type %d at byte %d" % (w, s))
                values.append(bytes(buf[v[0]:v[1]]))
            elif number == 2:             # FloatList
                if w == _LENGTH:
                    if (v[1] - v[0]) % 4:
                        raise ExampleError("packed float_list of %d bytes at byte %d"
                                           % (v[1] - v[0], s))
                    values.extend(struct.unpack_from("<%df" % ((v[1] - v[0]) // 4), buf, v[0]))
                elif w == _FIXED32:
                    values.append(struct.unpack_from("<f", buf, v[0])[0])
                else:
                    raise ExampleError("float_list value with wire type %d at byte %d" % (w, s))
            else:                         # Int64List
                if w == _LENGTH:
                    p, q = v
                    while p < q:
                        x, p = _varint(buf, p, q)
                        values.append(_int64(x))
                elif w == _VARINT:
                    values.append(_int64(v))
                else:
                    raise ExampleError("int64_list value with wire type %d at byte %d" % (w, s))
    return values


def parse_example(data):
    """{feature name: list of values} of a serialized tf.train.Example."""
    buf = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    features = {}
    for number, wire, value, start in _fields(buf, 0, len(buf)):
        if number != 1:
            continue
        if wire != _LENGTH:
            raise ExampleError("Example.features with wire type %d at byte %d" % (wire, start))
        for n, w, entry, s in _fields(buf, value[0], value[1]):
            if n != 1:
                continue
            if w != _LENGTH:
                raise ExampleError("Features.feature with wire type %d at byte %d" % (w, s))
            name = None
            feature = []
            for en, ew, ev, es in _fields(buf, entry[0], entry[1]):
                if en == 1 and ew == _LENGTH:
                    try:
                        name = bytes(buf[ev[0]:ev[1]]).decode("utf-8")
                    except UnicodeDecodeError:
                        raise ExampleError("feature name at byte %d is not UTF-8" % es) from None
                elif en == 2 and ew == _LENGTH:
                    feature = _feature(buf, ev[0], ev[1])
            if name is None:
                name = ""                 # proto3 map: a missing key is ""
            features[name] = feature
    return features
