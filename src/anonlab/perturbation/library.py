"""The OBT matrix library: seeded 2 x 2 and 3 x 3 orthogonal matrices above a privacy level.

OBT (the paper, section 3, step 1) draws each pair's or triple's matrix from a
library built beforehand that holds only orthogonal matrices meeting the
minimum privacy level ``P(A) = R(A) * S(A) >= p_min`` (data-independent form,
eq. 19). The library is built once from a seed, may be stored as JSON and is
reused for every table.

Candidates are Haar-distributed orthogonal matrices (rotations and
reflections): the QR factorization of a Gaussian matrix with the signs of
``R``'s diagonal moved into ``Q`` (Mezzadri 2007, "How to generate random
matrices from the classical compact groups"), kept when they meet ``p_min``.
The highest ``P`` a 2 x 2 matrix can reach is about 0.87 (a rotation by about
140 degrees); 3 x 3 matrices reach about 0.89. Levels near these maxima are
rare among random matrices, so building such a library takes many draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, expect_type
from anonlab.perturbation.measures import privacy_level

FloatArray = NDArray[np.float64]
LIBRARY_FORMAT = "anonlab-obt-library"
DEFAULT_SIZE = 64
_BATCH = 8192
_MAX_DRAWS = 2_000_000


def haar_orthogonal(rng: np.random.Generator, n: int, count: int) -> FloatArray:
    """``count`` independent Haar-random ``n x n`` orthogonal matrices (QR with sign fix)."""
    gauss = rng.standard_normal((count, n, n))
    q, r = np.linalg.qr(gauss)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    signs[signs == 0] = 1.0
    return np.asarray(q * signs[:, None, :], dtype=np.float64)


def _draw_qualifying(rng: np.random.Generator, n: int, size: int, min_privacy: float) -> FloatArray:
    kept: list[FloatArray] = []
    found = drawn = 0
    while found < size:
        if drawn >= _MAX_DRAWS:
            best = float(np.max(privacy_level(haar_orthogonal(rng, n, _BATCH))))
            raise AnonlabError(
                f"min_privacy {min_privacy:g} is out of reach: no {n}x{n} orthogonal matrix "
                f"reached it in {_MAX_DRAWS} draws (the best seen is about {best:.3f}); "
                "lower it",
                parameter="min_privacy",
            )
        batch = haar_orthogonal(rng, n, _BATCH)
        drawn += _BATCH
        good = batch[privacy_level(batch) >= min_privacy]
        kept.append(good)
        found += good.shape[0]
    return np.concatenate(kept)[:size]


@dataclass(frozen=True)
class MatrixLibrary:
    """Orthogonal 2 x 2 and 3 x 3 matrices, each with ``P(A) >= min_privacy``."""

    min_privacy: float
    seed: int
    pairs: FloatArray = field(repr=False)
    triples: FloatArray = field(repr=False)

    @classmethod
    def build(cls, min_privacy: float, seed: int, size: int = DEFAULT_SIZE) -> MatrixLibrary:
        """Draw ``size`` qualifying matrices of each size from ``seed``."""
        check_min_privacy(min_privacy)
        check_seed(seed)
        if size < 1:
            raise AnonlabError(f"size {size} must be at least 1", parameter="size")
        return _cached_build(float(min_privacy), int(seed), int(size))

    def matrices(self, n: int) -> FloatArray:
        """The stored ``n x n`` matrices (``n`` is 2 or 3)."""
        if n == 2:
            return self.pairs
        if n == 3:
            return self.triples
        raise AnonlabError(f"the OBT library holds 2x2 and 3x3 matrices, not {n}x{n}")

    def draw(self, rng: np.random.Generator, n: int) -> FloatArray:
        """One matrix of size ``n`` chosen uniformly from the library."""
        stack = self.matrices(n)
        return np.array(stack[int(rng.integers(stack.shape[0]))])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the matrices at full precision)."""
        return {
            "format": LIBRARY_FORMAT,
            "version": 1,
            "min_privacy": self.min_privacy,
            "seed": self.seed,
            "pairs": self.pairs.tolist(),
            "triples": self.triples.tolist(),
        }

    def save(self, path: str | Path) -> None:
        """Store the library as JSON (atomic write)."""
        from anonlab.io import write_json

        write_json(self.to_dict(), path)

    @classmethod
    def load(cls, path: str | Path) -> MatrixLibrary:
        """Read a stored library and check every matrix is orthogonal and qualifies."""
        from anonlab.io import read_json

        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != LIBRARY_FORMAT:
            raise AnonlabError(
                f"library '{path}' is not an OBT matrix library: give a library "
                "file that anonlab wrote",
                parameter="library",
            )
        try:
            lib = cls(
                float(data["min_privacy"]),
                int(data["seed"]),
                np.asarray(data["pairs"], dtype=np.float64).reshape(-1, 2, 2),
                np.asarray(data["triples"], dtype=np.float64).reshape(-1, 3, 3),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AnonlabError(f"OBT library '{path}' is damaged ({exc}): rebuild it") from None
        if not (np.isfinite(lib.min_privacy) and 0.0 <= lib.min_privacy < 1.0):
            raise AnonlabError(
                f"OBT library '{path}' is damaged (privacy level "
                f"{lib.min_privacy} is not in [0, 1)): rebuild it"
            )
        for stack in (lib.pairs, lib.triples):
            n = stack.shape[-1]
            if stack.shape[0] == 0 or not np.allclose(
                stack @ np.swapaxes(stack, 1, 2), np.eye(n), atol=1e-9
            ):
                raise AnonlabError(
                    f"OBT library '{path}' holds a non-orthogonal or no {n}x{n} matrix: rebuild it"
                )
            if np.any(privacy_level(stack) < lib.min_privacy - 1e-12):
                raise AnonlabError(
                    f"OBT library '{path}' holds a matrix below its own privacy level: rebuild it"
                )
        return lib


@lru_cache(maxsize=8)
def _cached_build(min_privacy: float, seed: int, size: int) -> MatrixLibrary:
    rng = np.random.default_rng(seed)
    pairs = _draw_qualifying(rng, 2, size, min_privacy)
    triples = _draw_qualifying(rng, 3, size, min_privacy)
    pairs.setflags(write=False)
    triples.setflags(write=False)
    return MatrixLibrary(min_privacy, seed, pairs, triples)


def check_min_privacy(min_privacy: float) -> None:
    """Refuse a privacy level that is not a finite number in [0, 1)."""
    if not np.isfinite(min_privacy) or not 0.0 <= min_privacy < 1.0:
        raise AnonlabError(
            f"min_privacy {min_privacy} must be in [0, 1) "
            "(P = R x S; 2x2 matrices reach about 0.87 at most)",
            parameter="min_privacy",
        )


def check_seed(seed: int | None) -> None:
    """Refuse a seed NumPy's generators cannot take (they need a whole number >= 0)."""
    if seed is not None and int(seed) < 0:
        raise AnonlabError(f"seed {seed} must be a whole number >= 0", parameter="seed")


def fresh_seed() -> int:
    """128 bits from the operating system's entropy: a transform nobody can regenerate.

    The seed of a perturbation regenerates its pairing, matrices and noise, so a
    predictable seed (a default such as 0, or a small number) lets anyone undo
    the release; this is the seed used when none is given.
    """
    # drawn from the operating system when no entropy is given: an int
    return expect_type(np.random.SeedSequence().entropy, int, "SeedSequence's entropy")


def library_seed(seed: int) -> int:
    """The seed of the library built for a perturbation seeded with ``seed``.

    A stored library records its seed; deriving it (through NumPy's seed
    hashing) keeps the library file from giving away the perturbation's seed.
    """
    return int(np.random.default_rng([int(seed), 0x0B7]).integers(2**63))
