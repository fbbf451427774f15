"""TFLite sparse tensors made dense (TFLite's `FormatConverter`, sparsity_format_converter.cc).

A sparse constant keeps only its stored values and a `SparsityParameters` table: the order in
which its dimensions (and, for block sparsity, the dimensions of its blocks) are traversed, and
for each traversed dimension either DENSE (every index, `dense_size` of them) or SPARSE_CSR
(`array_segments[p]..array_segments[p + 1]` of `array_indices` under parent position `p`). The
stored values follow that traversal. `densified` walks it level by level, all positions of a
level at once, and scatters the values into the dense array the `DENSIFY` operator would
produce at run time.
"""

from __future__ import annotations

import numpy as np
import tflite

_INDEX_VECTORS = {tflite.SparseIndexVector.Int32Vector: tflite.Int32Vector,
                  tflite.SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
                  tflite.SparseIndexVector.Uint8Vector: tflite.Uint8Vector}


def _index_vector(kind: int, table) -> np.ndarray:
    if kind not in _INDEX_VECTORS or table is None:
        raise ValueError(f"a sparse dimension has no index vector (type {kind})")
    vector = _INDEX_VECTORS[kind]()
    vector.Init(table.Bytes, table.Pos)
    return vector.ValuesAsNumpy().astype(np.int64) if vector.ValuesLength() else np.zeros(0, np.int64)


def densified(values: np.ndarray, shape: tuple[int, ...], sparsity) -> np.ndarray:
    """The dense array of `shape` whose stored `values` and `sparsity` (a tflite.SparsityParameters)
    describe it; zeros where nothing is stored. Raises ValueError on an inconsistent table."""
    rank = len(shape)
    order = [int(d) for d in sparsity.TraversalOrderAsNumpy()] if sparsity.TraversalOrderLength() else list(range(rank))
    block_map = [int(d) for d in sparsity.BlockMapAsNumpy()] if sparsity.BlockMapLength() else []
    levels = sparsity.DimMetadataLength()
    if levels != len(order) or levels != rank + len(block_map) or sorted(order) != list(range(levels)):
        raise ValueError(f"sparsity: traversal order {order} and {levels} dimensions do not fit the shape "
                         f"{list(shape)} with block map {block_map}")
    if any(not 0 <= d < rank for d in block_map):
        raise ValueError(f"sparsity: block map {block_map} names a dimension outside the shape {list(shape)}")
    block_sizes = [sparsity.DimMetadata(order.index(rank + b)).DenseSize() for b in range(len(block_map))]
    positions = np.zeros(1, np.int64)  # each partial path's position in its level
    indices = np.zeros((0, 1), np.int64)  # one row per traversed level, one column per path
    for level in range(levels):
        metadata = sparsity.DimMetadata(level)
        if metadata.Format() == tflite.DimensionType.DENSE:
            size = metadata.DenseSize()
            level_indices = np.tile(np.arange(size, dtype=np.int64), positions.size)
            indices = np.repeat(indices, size, axis=1)
            positions = (np.repeat(positions, size) * size + level_indices)
        else:
            segments = _index_vector(metadata.ArraySegmentsType(), metadata.ArraySegments())
            stored = _index_vector(metadata.ArrayIndicesType(), metadata.ArrayIndices())
            if positions.size and (positions.max() + 1 >= segments.size or np.any(np.diff(segments) < 0)
                                   or segments[-1] > stored.size or segments[0] < 0):
                raise ValueError("sparsity: array segments out of range")
            counts = segments[positions + 1] - segments[positions]
            starts = np.repeat(segments[positions], counts)
            within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            positions = starts + within
            level_indices = stored[positions]
            indices = np.repeat(indices, counts, axis=1)
        indices = np.vstack([indices, level_indices[None, :]])
    if indices.shape[1] != values.size:
        raise ValueError(f"sparsity: {values.size} stored values for {indices.shape[1]} stored positions")
    original = np.zeros((rank, indices.shape[1]), np.int64)
    for level, dimension in enumerate(order[:rank]):
        original[dimension] = indices[level]
    for level in range(rank, levels):
        block = order[level] - rank
        original[block_map[block]] = original[block_map[block]] * block_sizes[block] + indices[level]
    if np.any(original >= np.asarray(shape, np.int64)[:, None]) or np.any(original < 0):
        raise ValueError(f"sparsity: a stored index lies outside the shape {list(shape)}")
    dense = np.zeros(shape, values.dtype)
    dense[tuple(original)] = values.ravel()
    return dense
