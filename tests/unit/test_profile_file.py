"""glowmlir.quantization.profile: Glow's histogram accumulation and the three-document profile YAML."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from glowmlir.errors import GlowError
from glowmlir.quantization import profile as profile_module
from glowmlir.quantization.params import FLT_MAX, round_to_float32
from glowmlir.quantization.profile import NodeProfile, Profile, read_profile, write_profile

# ----------------------------------------------------------------------------- accumulation

def test_empty_profile_is_glows_initial_state():
    entry = NodeProfile.empty("conv1:0")
    assert (entry.min, entry.max) == (FLT_MAX, -FLT_MAX)
    assert entry.histogram.dtype == np.float64 and entry.histogram.tolist() == [0.0] * 10
    with pytest.raises(ValueError):
        NodeProfile.empty("x:0", 0)


def test_update_two_batches_hand_computed():
    entry = NodeProfile.empty("x:0", 4)
    entry.update(np.array([0, 1, 2, 3, 4], dtype=np.float32))
    # width 1: 0,1,2,3 -> bins 0..3, 4 -> min(4, 3) = 3
    assert (entry.min, entry.max, entry.histogram.tolist()) == (0.0, 4.0, [1, 1, 1, 2])
    entry.update(np.array([-4, 0], dtype=np.float32))
    # range -> [-4, 4], width 2; old bins start at 0,1,2,3 -> new bins 2,2,3,3 (each fits whole);
    # then -4 -> bin 0 and 0 -> bin 2.
    assert (entry.min, entry.max, entry.histogram.tolist()) == (-4.0, 4.0, [1, 0, 3, 3])


def test_update_splits_an_old_bin_across_two_new_bins():
    entry = NodeProfile.empty("x:0", 2)
    entry.update([0, 0.9, 1.1, 1.5, 2])  # width 1 -> [2, 3]
    assert entry.histogram.tolist() == [2, 3]
    entry.update([3])
    # new width 1.5: old bin [1, 2) of 3 counts overlaps new bin 0 by half: round(1.5) = 2 stay,
    # 1 moves to bin 1; then 3 -> bin 1.
    assert (entry.min, entry.max, entry.histogram.tolist()) == (0.0, 3.0, [4, 2])


def test_update_after_a_constant_first_batch_keeps_every_count():
    entry = NodeProfile.empty("x:0")
    entry.update([2.0, 2.0, 2.0])  # zero width: everything in bin 0
    assert (entry.min, entry.max, entry.histogram[0]) == (2.0, 2.0, 3)
    entry.update([0.0, 4.0])
    assert entry.histogram.tolist() == [1, 0, 0, 0, 0, 3, 0, 0, 0, 1]


def test_update_ignores_empty_tensors_and_rejects_nan():
    entry = NodeProfile.empty("x:0")
    entry.update(np.zeros(0))
    assert entry.min == FLT_MAX
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(GlowError, match="x:0"):
            entry.update([1.0, bad, 2.0])


@pytest.mark.parametrize("num_bins", [1, 10, 255, 2048])
def test_bin_counts_are_the_clamped_bin_of_every_value(num_bins):
    """The counting of `update` folds the bins past the last into it after counting: the same
    counts as clamping each value's bin (Glow's getBin), on random tensors of every magnitude
    and on constant ones (zero width)."""
    rng = np.random.default_rng(num_bins)
    for trial in range(40):
        values = (rng.standard_normal(rng.integers(1, 3000)) * 10.0 ** rng.uniform(-30, 30)).astype(np.float32)
        if trial % 8 == 0:
            values[:] = values[0]
        low = float(values.min())
        width = round_to_float32(round_to_float32(float(values.max()) - low) / num_bins)
        clamped = np.minimum(np.floor((values - np.float32(low)) / np.float32(width)), num_bins - 1) if width else 0
        expected = np.bincount(np.broadcast_to(clamped, values.shape).astype(np.int64), minlength=num_bins)
        np.testing.assert_array_equal(profile_module._bin_counts(values, low, width, num_bins), expected)


# ----------------------------------------------------------------------------- writing

def _profile(*entries: NodeProfile, version: str = "", graph_hash: int = 0x3A5F09C2D4E1B777) -> Profile:
    return Profile(version, graph_hash, {entry.name: entry for entry in entries})


def test_written_layout_is_llvm_yaml_io(tmp_path):
    path = str(tmp_path / "profile.yaml")
    write_profile(path, _profile(NodeProfile("relu:0", 0.0, 6.0, [0, 3, 1]),
                                 NodeProfile("conv1:0", -1.5, 2.25, [1, 0, 2]), graph_hash=0xABC))
    assert open(path).read() == (
        "---\n"
        "GlowToolsVersion: ''\n"
        "...\n"
        "---\n"
        "GraphPreLowerHash: 0x0000000000000ABC\n"
        "...\n"
        "---\n"
        "- NodeOutputName:  'conv1:0'\n"
        "  Min:             -1.5\n"
        "  Max:             2.25\n"
        "  Histogram:       [ 1, 0, 2 ]\n"
        "- NodeOutputName:  'relu:0'\n"
        "  Min:             0.0\n"
        "  Max:             6.0\n"
        "  Histogram:       [ 0, 3, 1 ]\n"
        "...\n")


def test_long_histograms_wrap_after_column_70(tmp_path):
    path = str(tmp_path / "profile.yaml")
    counts = np.arange(40) * 1000.0
    write_profile(path, _profile(NodeProfile("a:0", 0.0, 1.0, counts), version="glowmlir 0.1"))
    lines = open(path).read().splitlines()
    assert lines[1] == "GlowToolsVersion: glowmlir 0.1"
    histogram_lines = lines[lines.index("  Max:             1.0") + 1:-1]
    assert histogram_lines[0].startswith("  Histogram:       [ 0, 1000, ")
    assert all(line.startswith(" " * 21) and line[21] != " " for line in histogram_lines[1:])
    assert all(line.endswith(", ") for line in histogram_lines[:-1]) and histogram_lines[-1].endswith(" ]")
    assert all(len(line) <= 80 for line in histogram_lines)
    assert np.array_equal(read_profile(path).entries["a:0"].histogram, counts)


def test_empty_profile_round_trips(tmp_path):
    path = str(tmp_path / "empty.yaml")
    write_profile(path, _profile())
    assert open(path).read().endswith("---\n[]\n...\n")
    assert read_profile(path) == _profile()


finite_float32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite_float32, finite_float32), min_size=1, max_size=5),
       st.integers(0, 2 ** 64 - 1),
       st.lists(st.integers(0, 999_999), min_size=1, max_size=30))
def test_round_trip_is_exact(bounds, graph_hash, counts):
    entries = [NodeProfile(f"node{index}:0", min(pair), max(pair), counts) for index, pair in enumerate(bounds)]
    original = _profile(*entries, graph_hash=graph_hash, version="1.10")
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "profile.yaml")
        write_profile(path, original)
        assert read_profile(path) == original


@pytest.mark.parametrize("value", [2.0 ** -149, 2.0 ** -126, 2.0 ** -20, 2.0 ** 100, 1e-40, 0.1, -0.0,
                                   -FLT_MAX, FLT_MAX, float(np.float32(3.14159265))])
def test_min_max_are_bit_exact(tmp_path, value):
    path = str(tmp_path / "p.yaml")
    write_profile(path, _profile(NodeProfile("v:0", value, FLT_MAX, [1])))
    read_back = read_profile(path).entries["v:0"].min
    assert np.float32(read_back).tobytes() == np.float32(value).tobytes()


def test_counts_use_glows_six_digit_format(tmp_path):
    # Glow writes histogram counts with LLVM's default "%g": more than six digits are rounded.
    path = str(tmp_path / "p.yaml")
    write_profile(path, _profile(NodeProfile("v:0", 0.0, 1.0, [1234567, 999999])))
    assert "[ 1.23457e+06, 999999 ]" in open(path).read()
    assert read_profile(path).entries["v:0"].histogram.tolist() == [1234570.0, 999999.0]


def test_awkward_names_round_trip(tmp_path):
    path = str(tmp_path / "p.yaml")
    names = ["it's:0", "tab\there:0", "line\nbreak:0", "caf\u00e9:0", "plain_name", "123", "true", "a/b:1", '"q":0']
    original = _profile(*(NodeProfile(name, 0.0, 1.0, [1]) for name in names))
    write_profile(path, original)
    assert read_profile(path) == original
    assert len(list(yaml.safe_load_all(open(path, encoding="utf-8")))) == 3  # plain PyYAML reads it too


def test_channel_means_accumulate_and_round_trip_in_a_fourth_document(tmp_path):
    """Each NCHW or [batch, features] tensor folds its per-channel means (axis 1) into a running
    mean; other ranks have none. The means travel in a fourth YAML document (`ChannelMeans`,
    6 digits as `%g`), after the three Glow reads; a profile without means keeps three."""
    rng = np.random.default_rng(1)
    batches = [rng.normal(size=(1, 3, 4, 5)).astype(np.float32) for _ in range(3)]
    conv, features, vector = NodeProfile.empty("conv:0"), NodeProfile.empty("fc:0"), NodeProfile.empty("v:0")
    for batch in batches:
        conv.update(batch)
        features.update(batch.reshape(2, 30))
        vector.update(batch.ravel())
    np.testing.assert_allclose(conv.channel_means, np.concatenate(batches).astype(np.float64).mean(axis=(0, 2, 3)),
                               rtol=1e-12)
    np.testing.assert_allclose(features.channel_means,
                               np.concatenate([b.reshape(2, 30) for b in batches]).astype(np.float64).mean(0))
    assert vector.channel_means is None
    path = str(tmp_path / "p.yaml")
    write_profile(path, _profile(conv, features, vector))
    documents = list(yaml.safe_load_all(open(path, encoding="utf-8")))
    assert len(documents) == 4 and [item["NodeOutputName"] for item in documents[3]["ChannelMeans"]] == \
        ["conv:0", "fc:0"]
    read = read_profile(path)
    np.testing.assert_allclose(read.entries["conv:0"].channel_means, conv.channel_means, rtol=1e-5)
    assert read.entries["v:0"].channel_means is None and read == _profile(conv, features, vector)


def test_a_bad_channel_means_document_is_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("---\nGlowToolsVersion: ''\n...\n---\nGraphPreLowerHash: 0x1\n...\n---\n[]\n...\n"
                    "---\nChannelMeans:\n  - NodeOutputName: 'a:0'\n    Means: 3\n...\n")
    with pytest.raises(GlowError, match="ChannelMeans item 1 needs exactly NodeOutputName and a Means sequence"):
        read_profile(str(path))


def test_write_rejects_malformed_profiles_without_creating_a_file(tmp_path):
    path = str(tmp_path / "p.yaml")
    with pytest.raises(ValueError, match="Min > Max"):
        write_profile(path, _profile(NodeProfile.empty("never:0")))
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        write_profile(path, _profile(graph_hash=-1))
    assert os.listdir(tmp_path) == []


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    path = str(tmp_path / "p.yaml")
    write_profile(path, _profile(NodeProfile("old:0", 0.0, 1.0, [1])))
    before = open(path).read()

    def failing_replace(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(profile_module.os, "replace", failing_replace)
    with pytest.raises(GlowError, match="cannot write .*p.yaml.*No space left"):
        write_profile(path, _profile(NodeProfile("new:0", 0.0, 1.0, [1])))
    assert os.listdir(tmp_path) == ["p.yaml"] and open(path).read() == before


def test_write_into_a_missing_directory(tmp_path):
    path = str(tmp_path / "no" / "such" / "p.yaml")
    with pytest.raises(GlowError, match='-dump-profile: cannot write ".*p.yaml"'):
        write_profile(path, _profile())


# ----------------------------------------------------------------------------- reading

HAND_WRITTEN = """\
---
GlowToolsVersion: ''
...
---
GraphPreLowerHash: 12345
...
---
- NodeOutputName:  'conv1:0'
  Min:             -0.5
  Max:             1e-3
  Histogram:
    - 1
    - 0.0
    - 2.000000
- NodeOutputName: data
  Min: 0
  Max: 255.0
  Histogram: [3, 4]
- NodeOutputName:  'conv1:0'
  Min:             -9.0
  Max:             9.0
  Histogram:       [ 9 ]
...
"""


def test_reads_a_hand_written_glow_style_file(tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(HAND_WRITTEN)
    profile = read_profile(str(path))
    assert profile.tools_version == "" and profile.graph_hash == 12345
    conv = profile.entries["conv1:0"]  # duplicate names: the first wins, as in Glow
    assert (conv.min, conv.max) == (-0.5, float(np.float32(1e-3)))
    assert conv.histogram.dtype == np.float64 and conv.histogram.tolist() == [1, 0, 2]
    assert profile.entries["data"].histogram.tolist() == [3, 4]


def test_reads_hex_hashes_and_non_empty_versions(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("---\nGlowToolsVersion: 1.10\n...\n---\nGraphPreLowerHash: 0xFFFFFFFFFFFFFFFF\n...\n---\n[]\n...\n")
    profile = read_profile(str(path))
    assert profile.tools_version == "1.10" and profile.graph_hash == 2 ** 64 - 1 and profile.entries == {}


def _entry(**overrides) -> str:
    fields = {"NodeOutputName": "'conv1:0'", "Min": "-1.0", "Max": "1.0", "Histogram": "[ 1, 2 ]", **overrides}
    return "- " + "\n  ".join(f"{key}: {value}" for key, value in fields.items() if value is not None) + "\n"


def _document(entries: str, hash_text: str = "0x1F") -> str:
    return f"---\nGlowToolsVersion: ''\n...\n---\nGraphPreLowerHash: {hash_text}\n...\n---\n{entries}...\n"


@pytest.mark.parametrize("text, fragment", [
    ("---\nGlowToolsVersion: ''\n...\n---\nGraphPreLowerHash: 0x1\n...\n",
     "is not a Glow profile (expected three YAML documents, four with glow-profile's ChannelMeans; found 2)"),
    ("", "ChannelMeans; found 0"),
    (_document(_entry(Max=None)), 'entry 1 ("conv1:0") is missing key "Max"'),
    (_document(_entry(NodeOutputName=None)), 'entry 1 is missing key "NodeOutputName"'),
    (_document(_entry(Min="2.0")), 'Min > Max for entry "conv1:0"'),
    (_document(_entry(Min="nan")), 'Min > Max for entry "conv1:0"'),
    (_document(_entry(Min="low")), "Min of entry 1 (\"conv1:0\") is not a number: 'low'"),
    (_document(_entry(Histogram="[ 1, x ]")), "a Histogram value of entry 1"),
    (_document(_entry(Histogram="3")), "Histogram is not a sequence"),
    (_document(_entry(Scale="1.0")), 'unknown key "Scale"'),
    (_document(_entry(), hash_text="0x1G"), "GraphPreLowerHash is not an unsigned 64-bit number"),
    (_document(_entry(), hash_text="0x10000000000000000"), "GraphPreLowerHash is not an unsigned 64-bit number"),
    (_document("{a: 1}\n"), "the third document must be a sequence"),
    ("---\nVersion: ''\n...\n---\nGraphPreLowerHash: 0x1\n...\n---\n[]\n...\n",
     'the first document must be a mapping with key "GlowToolsVersion"'),
    ("---\nGlowToolsVersion: ''\nExtra: 1\n...\n---\nGraphPreLowerHash: 0x1\n...\n---\n[]\n...\n",
     'unknown key "Extra" in the first document'),
    ("- a: [1, 2\n- b: }\n", "is not valid YAML (line"),
    ("key: 'unterminated\n", "is not valid YAML"),
])
def test_bad_profiles_raise_one_line_glow_errors(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(GlowError) as raised:
        read_profile(str(path))
    message = str(raised.value)
    assert message.startswith(f'-load-profile: "{path}"')
    assert fragment in message
    assert "\n" not in message


def test_binary_garbage_is_not_yaml(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(GlowError, match=r'-load-profile: ".*weights.bin" is not valid YAML'):
        read_profile(str(path))


def test_missing_file(tmp_path):
    path = str(tmp_path / "missing.yaml")
    with pytest.raises(GlowError, match=r'-load-profile: ".*missing.yaml" not found'):
        read_profile(path)


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(GlowError, match="cannot read"):
        read_profile(str(tmp_path))
