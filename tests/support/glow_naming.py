"""Glow's naming rules, written from Glow's sources (github.com/pytorch/glow at 05dd99b97,
2024-05-11) for the tests, independently of glowmlir's glowmlir/quantization/glow_names.py:
the tests derive the keys a profile written by Glow has from these rules and the order in
which Glow's loaders and optimizer create nodes (each step cited where the test lists it).

* `legalize_name`: lib/Support/Support.cpp `legalizeName` (names here are far below its
  500-character truncation);
* `get_prefix`: lib/Graph/Graph.cpp `Module::getPrefix`;
* `unique_name`: lib/Graph/Graph.cpp `Module::uniqueName`;
* `GlowNames.storage`: `Module::createPlaceholder` / `Module::addConstant` (unique against
  every node name the module has used, `usedNodeNames_`, and every storage name);
  `GlowNames.node`: include/glow/Graph/Graph.h `Function::addNode` (unique against the
  storage names and the function's node names, then `registerNodeName`);
  `GlowNames.original`: `Module::registerOriginalName`, called by the ONNX and Caffe2
  loaders' `loadOperator` with the model node's own (unlegalized) name;
* `onnx_operator_name`: include/glow/Importer/ProtobufLoader.h `loadOperatorName` (since
  glow ae8f50c4f, 2019: an unnamed node is `<op_type>_<first output>`);
  `caffe2_operator_name`: its specialization in lib/Importer/Caffe2ModelLoader.cpp (an
  unnamed op is its first output);
* `node_output_name`: include/glow/Graph/NodeValue.h `NodeValue::generateNodeOutputName`
  (`<node name>:<result number>`), the key of a profile entry.
"""

from __future__ import annotations


def legalize_name(name: str) -> str:
    """Every character that is not a letter, digit or `_` becomes `_`; an empty name or one
    starting with a digit gets an `A` in front."""
    legal = "".join(c if (c.isascii() and c.isalnum()) or c == "_" else "_" for c in name)
    return "A" + legal if not legal or legal[0].isdigit() else legal


def get_prefix(name: str) -> str:
    """`name` without its last `__<digits>` (the digits may be none)."""
    delim = name.rfind("__")
    if delim != -1 and all(c.isdigit() for c in name[delim + 2:]):
        return name[:delim]
    return name


def unique_name(name: str, string_table: set[str], update_table: set[str], original_names: set[str]) -> str:
    """The legalized name if neither table has it (inserted into `update_table`); else
    `<prefix>__<i>`, i = 1, 2, ... the first in neither table, where the prefix keeps a
    trailing `__<digits>` only if the legalized name is an original name."""
    legal = legalize_name(name)
    if legal not in string_table and legal not in update_table:
        update_table.add(legal)
        return legal
    prefix = legal if legal in original_names else get_prefix(legal)
    for i in range(1, 10000):
        full = f"{prefix}__{i}"
        if full not in string_table and full not in update_table:
            update_table.add(full)
            return full
    raise AssertionError("Unable to find a unique a name.")


class GlowNames:
    """The name tables of one Glow module with one function."""

    def __init__(self):
        self.used_storage_names: set[str] = set()
        self.used_node_names: set[str] = set()  # the module's: every name any function's node took
        self.unique_node_names: set[str] = set()  # the function's
        self.original_names: set[str] = set()

    def storage(self, name: str) -> str:
        return unique_name(name, self.used_node_names, self.used_storage_names, self.original_names)

    def node(self, name: str) -> str:
        name = unique_name(name, self.used_storage_names, self.unique_node_names, self.original_names)
        self.used_node_names.add(name)
        return name

    def original(self, name: str) -> None:
        if name:
            self.original_names.add(name)


def onnx_operator_name(name: str, op_type: str, outputs: list[str]) -> str:
    if name:
        return name
    return f"{op_type}_{outputs[0]}" if outputs else op_type


def caffe2_operator_name(name: str, op_type: str, outputs: list[str]) -> str:
    if name:
        return name
    return outputs[0] if outputs else op_type


def node_output_name(node_name: str, result: int = 0) -> str:
    return f"{node_name}:{result}"
