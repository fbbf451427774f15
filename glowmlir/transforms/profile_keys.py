"""How the quantization passes and glow-profile name a value in a profile (`value_key`,
`profile_entry`) and which graph a profile was made for (`graph_hash`)."""

from __future__ import annotations

import hashlib

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from glowmlir.dialects import glow
from glowmlir.quantization.glow_names import PROFILE_NAME, profile_keys
from glowmlir.quantization.profile import NodeProfile, Profile


def value_key(value: SSAValue) -> str | None:
    """The profile key of a value: `<node name>:0`, or None for an unnamed op's result."""
    op = value.owner
    if isinstance(op, glow.PlaceholderOp):
        return f"{op.name_.data}:0"
    name = op.attributes.get(glow.NODE_NAME) if isinstance(op, Operation) else None
    return f"{name.data}:0" if name is not None else None


def profile_entry(value: SSAValue, profile: Profile) -> NodeProfile | None:
    """The entry a profile has for a value: under its key (`value_key`) in a profile
    glow-profile wrote; first under Glow's name for it (`PROFILE_NAME`, see
    quantization/glow_names.py), then its key, in a profile Glow (or anyone else) wrote."""
    key = value_key(value)
    if key is None:
        return None
    glow_name = value.owner.attributes.get(PROFILE_NAME) if isinstance(value.owner, Operation) else None
    for candidate in profile_keys(key[:-2], glow_name.data if glow_name else None, profile.tools_version):
        if candidate in profile.entries:
            return profile.entries[candidate]
    return None


def graph_hash(module: ModuleOp) -> int:
    """A 64-bit hash of the graph before quantization (weights elided), as Glow's
    GraphPreLowerHash: a profile made for another graph is refused. The functions' names
    (the network name, `-network-name`) are left out, as Glow's `Function::getHash()` leaves
    them out: a profile still fits the model compiled under another name."""
    anonymous = module.clone()
    for function in anonymous.ops:
        if isinstance(function, glow.FunctionOp):
            function.properties["sym_name"] = StringAttr("graph")
    return int.from_bytes(hashlib.sha256(str(anonymous).encode()).digest()[:8], "little")
