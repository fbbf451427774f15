"""The part of Caffe2's protobuf schema that the Caffe2 importer reads, built at run time.

protoc is not needed: the messages are described with `descriptor_pb2.FileDescriptorProto`
and their classes made by `message_factory.GetMessageClass`, using the protobuf runtime
that onnx depends on. Field numbers, labels and types are those of `caffe2/proto/caffe2.proto`
in pytorch/pytorch (package `caffe2`, proto2):

    message Argument     { name = 1 (string); f = 2 (float); i = 3 (int64); s = 4 (bytes);
                           floats = 5 (repeated float); ints = 6 (repeated int64);
                           strings = 7 (repeated bytes) }
    message DeviceOption { device_type = 1 (int32); cuda_gpu_id = 2 (int32); random_seed = 3 (uint32) }
    message OperatorDef  { input = 1, output = 2 (repeated string); name = 3, type = 4 (string);
                           arg = 5 (repeated Argument); device_option = 6 (DeviceOption);
                           engine = 7 (string); control_input = 8 (repeated string);
                           is_gradient_op = 9 (bool) }
    message NetDef       { name = 1 (string); op = 2 (repeated OperatorDef); type = 3 (string);
                           num_workers = 4 (int32); device_option = 5 (DeviceOption);
                           arg = 6 (repeated Argument); external_input = 7,
                           external_output = 8 (repeated string) }

Later revisions of caffe2.proto add fields (Argument.n/nets/tensors/qtensors, DeviceOption's
node_name..., OperatorDef.debug_info/domain/op_version); TensorProto and the rest are not
described. A binary message keeps fields it does not know as unknown fields, and the text
format parser is told to skip them (`parse_text`), so files written by any revision load.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import Message

_Field = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _Field.LABEL_OPTIONAL, _Field.LABEL_REPEATED

# (message, [(field name, number, label, type, message type name or None)])
_MESSAGES = [
    ("Argument", [
        ("name", 1, _OPTIONAL, _Field.TYPE_STRING, None),
        ("f", 2, _OPTIONAL, _Field.TYPE_FLOAT, None),
        ("i", 3, _OPTIONAL, _Field.TYPE_INT64, None),
        ("s", 4, _OPTIONAL, _Field.TYPE_BYTES, None),
        ("floats", 5, _REPEATED, _Field.TYPE_FLOAT, None),
        ("ints", 6, _REPEATED, _Field.TYPE_INT64, None),
        ("strings", 7, _REPEATED, _Field.TYPE_BYTES, None),
    ]),
    ("DeviceOption", [
        ("device_type", 1, _OPTIONAL, _Field.TYPE_INT32, None),
        ("cuda_gpu_id", 2, _OPTIONAL, _Field.TYPE_INT32, None),
        ("random_seed", 3, _OPTIONAL, _Field.TYPE_UINT32, None),
    ]),
    ("OperatorDef", [
        ("input", 1, _REPEATED, _Field.TYPE_STRING, None),
        ("output", 2, _REPEATED, _Field.TYPE_STRING, None),
        ("name", 3, _OPTIONAL, _Field.TYPE_STRING, None),
        ("type", 4, _OPTIONAL, _Field.TYPE_STRING, None),
        ("arg", 5, _REPEATED, _Field.TYPE_MESSAGE, "Argument"),
        ("device_option", 6, _OPTIONAL, _Field.TYPE_MESSAGE, "DeviceOption"),
        ("engine", 7, _OPTIONAL, _Field.TYPE_STRING, None),
        ("control_input", 8, _REPEATED, _Field.TYPE_STRING, None),
        ("is_gradient_op", 9, _OPTIONAL, _Field.TYPE_BOOL, None),
    ]),
    ("NetDef", [
        ("name", 1, _OPTIONAL, _Field.TYPE_STRING, None),
        ("op", 2, _REPEATED, _Field.TYPE_MESSAGE, "OperatorDef"),
        ("type", 3, _OPTIONAL, _Field.TYPE_STRING, None),
        ("num_workers", 4, _OPTIONAL, _Field.TYPE_INT32, None),
        ("device_option", 5, _OPTIONAL, _Field.TYPE_MESSAGE, "DeviceOption"),
        ("arg", 6, _REPEATED, _Field.TYPE_MESSAGE, "Argument"),
        ("external_input", 7, _REPEATED, _Field.TYPE_STRING, None),
        ("external_output", 8, _REPEATED, _Field.TYPE_STRING, None),
    ]),
]


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="glowmlir/caffe2_subset.proto", package="caffe2",
                                              syntax="proto2")
    for message_name, fields in _MESSAGES:
        message = file.message_type.add(name=message_name)
        for name, number, label, field_type, type_name in fields:
            field = message.field.add(name=name, number=number, label=label, type=field_type)
            if type_name:
                field.type_name = f".caffe2.{type_name}"
    return file


# A private pool: the names cannot clash with another copy of caffe2.proto loaded in the process.
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())


def _message_class(name: str) -> type[Message]:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"caffe2.{name}"))


Argument = _message_class("Argument")
DeviceOption = _message_class("DeviceOption")
OperatorDef = _message_class("OperatorDef")
NetDef = _message_class("NetDef")


def parse_binary(data: bytes) -> Message:
    """A binary NetDef (protobuf errors propagate)."""
    net = NetDef()
    net.ParseFromString(data)
    return net


def parse_text(text: str) -> Message:
    """A protobuf text format NetDef; fields this subset does not describe are skipped."""
    return text_format.Parse(text, NetDef(), allow_unknown_field=True, descriptor_pool=_POOL)
