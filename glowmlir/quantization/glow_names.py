"""The names Glow gives graph nodes, so that a profile written by Glow finds our values.

A profile keys each value `<node name>:<result>` (Glow's `NodeValue::generateNodeOutputName`).
Our importers name an op after its model node (`glow.NODE_NAME`: its name, else its first
output's), made unique; Glow's `loadOperatorName` does the same except for an unnamed ONNX
node, which it calls `<op_type>_<first output>`. Glow's loaders and graph optimizer create
more nodes than we do under that name — the layout transposes around a convolution or pool,
the flatten in front of a fully connected layer, the copy of a Relu that transpose sinking
makes — and each takes a name first, so the node computing
the value is `conv__2`, not `conv`. Where the two differ, the importer records Glow's name in
`PROFILE_NAME` (see `glowmlir/importers/onnx/glow_names.py` for the rules), and
`profile_keys` looks a value up under it in a profile Glow wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from glowmlir.names import legalize_name

PROFILE_NAME = "glow_name"
"""The attribute holding the name of the Glow node that computes an op's value, when it
differs from the op's `name`: the key (`<glow_name>:0`) of its entry in a profile Glow wrote."""

GLOWMLIR_TOOLS_PREFIX = "glowmlir"
"""A profile whose GlowToolsVersion starts with this was written by glow-profile: its keys
are our names and its graph hash is ours."""

_NUMBERED = re.compile(r"(.*)__[0-9]*")


def glow_prefix(name: str) -> str:
    """Glow's `Module::getPrefix`: `name` without a trailing `__<digits>`."""
    match = _NUMBERED.fullmatch(name)
    return match.group(1) if match else name


class GlowNodeNames:
    """Glow's `Module::uniqueName` as `Function::addNode` calls it: a node name is legalized,
    must differ from every storage (constant, placeholder) name and every earlier node name,
    and on a clash becomes `<prefix>__<k>` with the smallest free k >= 1, where the prefix is
    the name without its own `__<digits>` unless the model's node was called that
    (`registerOriginalName`)."""

    def __init__(self, storage: Iterable[str] = ()):
        self.storage: set[str] = set()
        self.nodes: set[str] = set()
        self.originals: set[str] = set()
        for name in storage:  # `Module::addConstant` / `createPlaceholder`: unique among the storage names
            self.storage.add(self._unique(legalize_name(name), self.storage))

    def note_original(self, name: str) -> None:
        """`Module::registerOriginalName`: the model's own node name (unlegalized, as Glow)."""
        if name:
            self.originals.add(name)

    def _unique(self, legal: str, taken: set[str]) -> str:
        if legal not in self.storage and legal not in taken:
            return legal
        prefix = legal if legal in self.originals else glow_prefix(legal)
        k = 1
        while f"{prefix}__{k}" in self.storage or f"{prefix}__{k}" in taken:
            k += 1
        return f"{prefix}__{k}"

    def __call__(self, name: str) -> str:
        unique = self._unique(legalize_name(name), self.nodes)
        self.nodes.add(unique)
        return unique


def written_by_glowmlir(tools_version: str) -> bool:
    return tools_version.startswith(GLOWMLIR_TOOLS_PREFIX)


def profile_keys(name: str, glow_name: str | None, tools_version: str) -> list[str]:
    """The keys to look a value up under, first found wins: our `<name>:0` in a profile
    glow-profile wrote; Glow's `<glow_name>:0` then ours in any other (ours for a profile
    written by hand, and for values whose Glow name is ours)."""
    keys = [f"{name}:0"]
    if glow_name is not None and not written_by_glowmlir(tools_version):
        keys.insert(0, f"{glow_name}:0")
    return keys
