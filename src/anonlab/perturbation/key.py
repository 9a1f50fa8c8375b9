"""The secret key of a perturbation: everything needed to undo it, and nothing else.

The key holds the chosen columns in order, their means and deviations (the
z-score), the blocks (which columns each orthogonal matrix mixes, and the
matrix), the translation and the noise scale and seed of a geometric
perturbation, the number of records, and a fingerprint of the release (mean
and deviation of each released column) so that a key given with the wrong
file is refused. When the run dropped ``identifying`` columns, the key names
them (they are in no release, so no key can restore them). It is written
only to ``--key`` and never enters the release or a report.

Versions: a key whose gdp noise is drawn in row blocks is version 3 (an
older anonlab, which knows only the single noise stream, refuses it); every
other key is version 2, as before. Integrity: a key of version 2 or 3 carries
``sha256``, the SHA-256 digest of
its canonical content (every other key, as JSON with sorted keys and no
spaces). A key whose content no longer matches the digest (e.g. an edited
``stds``, which would invert silently to wrong values) is refused. The digest
guards against accidental edits and damage, not against someone who edits the
key on purpose and recomputes it (a key is a secret: whoever holds it can undo
the release anyway). Keys of version 1 (written before the digest existed)
have none; they are still read, because the key is the only way to undo their
release, and pass every other check on load: shapes, finite numbers, positive
deviations, orthogonal matrices (to 1e-9) and the method's own structure.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, AnonlabWarning

FloatArray = NDArray[np.float64]

#: what a release written without its key is told (``perturb`` without ``key``)
NO_KEY_MESSAGE = (
    "key is not given: this release can never be inverted, not even by its "
    "custodian: only a key file holds the means, deviations and transform that "
    "undo it"
)


class IrreversibleReleaseWarning(AnonlabWarning):
    """A perturbed release handed out without its key: no one can ever invert it.

    Not a risk warning (``fail_on_risk`` does not refuse it): the release is
    as protected as with a key, only its custodian cannot restore the original.
    """


KEY_FORMAT = "anonlab-perturbation-key"
#: 3: gdp noise in row blocks (``noise.stream = "blocked"``), which an anonlab that reads
#: only versions 1 and 2 must refuse rather than invert with the single stream;
#: 2: with the ``sha256`` integrity digest; 1: without
KEY_VERSION = 3
#: the version a key without blocked noise is written with (as before blocks existed)
PLAIN_KEY_VERSION = 2
METHODS = ("obt", "rbt", "rotation", "gdp")
ORTHOGONAL = ("obt", "rbt", "rotation")
ORTHOGONAL_TOL = 1e-9  # largest |A A^T - E| entry of a key's matrix
DIGEST_KEY = "sha256"
NOISE_STREAMS = ("single", "blocked")


@dataclass(frozen=True)
class Block:
    """An orthogonal ``k x k`` matrix acting on ``k`` named columns (released = A @ z)."""

    columns: tuple[str, ...]
    matrix: FloatArray


@dataclass(frozen=True)
class PerturbationKey:
    """Everything that undoes one perturbation (see the module docstring)."""

    method: str
    columns: tuple[str, ...]
    integer: tuple[bool, ...]
    means: FloatArray
    stds: FloatArray
    blocks: tuple[Block, ...]
    translation: FloatArray | None
    noise_scale: float
    noise_seed: int | None
    records: int
    release_means: FloatArray
    release_stds: FloatArray
    identifying: tuple[str, ...] = ()  # input columns dropped from the release: not restorable
    #: how the gdp noise is drawn from its seed: ``"blocked"`` (per block of rows,
    #: :func:`add_noise`), or ``"single"`` (one stream; keys written before blocks existed)
    noise_stream: str = "single"

    def full_matrix(self) -> FloatArray:
        """The ``d x d`` orthogonal matrix over ``columns`` assembled from the blocks."""
        index = {c: i for i, c in enumerate(self.columns)}
        full = np.zeros((len(self.columns), len(self.columns)))
        for block in self.blocks:
            idx = [index[c] for c in block.columns]
            full[np.ix_(idx, idx)] = block.matrix
        return full

    def noise(self) -> FloatArray | None:
        """The Gaussian noise added to the rotated records, regenerated from its seed."""
        if self.noise_seed is None or self.noise_scale == 0.0:
            return None
        out = np.empty((self.records, len(self.columns)))
        add_noise(
            out, self.noise_seed, self.noise_scale, sign=0.0, blocked=self.noise_stream == "blocked"
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (full float precision), sealed with its ``sha256`` digest."""
        content = {
            "format": KEY_FORMAT,
            "version": KEY_VERSION if self.noise_stream == "blocked" else PLAIN_KEY_VERSION,
            "method": self.method,
            "columns": list(self.columns),
            "integer": list(self.integer),
            "means": self.means.tolist(),
            "stds": self.stds.tolist(),
            "blocks": [
                {"columns": list(b.columns), "matrix": b.matrix.tolist()} for b in self.blocks
            ],
            "translation": None if self.translation is None else self.translation.tolist(),
            "noise": {
                "scale": self.noise_scale,
                "seed": self.noise_seed,
                # absent for the single stream, so keys written before are as they were
                **({"stream": self.noise_stream} if self.noise_stream != "single" else {}),
            },
            "records": self.records,
            "release_fingerprint": {
                "means": self.release_means.tolist(),
                "stds": self.release_stds.tolist(),
            },
        }
        if self.identifying:  # absent when none, so keys without dropped columns are as before
            content["identifying"] = list(self.identifying)
        return {**content, DIGEST_KEY: content_digest(content)}

    def save(self, path: str | Path) -> None:
        """Write the key as JSON (atomic, readable by its owner only: it undoes the release)."""
        from anonlab.io import write_json

        write_json(self.to_dict(), path, private=True)

    @classmethod
    def load(cls, path: str | Path) -> PerturbationKey:
        """Read and validate a key file."""
        from anonlab.io import read_json

        return cls.from_dict(read_json(path), str(path))

    @classmethod
    def from_dict(cls, data: Any, where: str = "key") -> PerturbationKey:
        """Validate a key's dict: shapes agree, the blocks partition the columns, orthogonal."""
        if not isinstance(data, dict) or data.get("format") != KEY_FORMAT:
            raise AnonlabError(
                f"'{where}' is not a perturbation key: give the key file "
                "written by 'anonlab perturb'"
            )
        if data.get("version") not in (1, PLAIN_KEY_VERSION, KEY_VERSION):
            raise AnonlabError(
                f"perturbation key '{where}' has format version "
                f"{data.get('version')!r}, which this anonlab does not know: "
                "use the anonlab version that wrote it"
            )
        try:
            columns = tuple(str(c) for c in data["columns"])
            d = len(columns)
            noise = data.get("noise") or {}
            fp = data["release_fingerprint"]
            key = cls(
                method=str(data["method"]),
                columns=columns,
                integer=tuple(bool(x) for x in data["integer"]),
                means=_vector(data["means"], d),
                stds=_vector(data["stds"], d),
                blocks=tuple(
                    Block(
                        tuple(str(c) for c in b["columns"]),
                        np.asarray(b["matrix"], dtype=np.float64),
                    )
                    for b in data["blocks"]
                ),
                translation=None
                if data.get("translation") is None
                else _vector(data["translation"], d),
                noise_scale=float(noise.get("scale") or 0.0),
                noise_seed=None if noise.get("seed") is None else int(noise["seed"]),
                records=int(data["records"]),
                release_means=_vector(fp["means"], d),
                release_stds=_vector(fp["stds"], d),
                identifying=tuple(str(c) for c in data.get("identifying") or ()),
                noise_stream=str(noise.get("stream") or "single"),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise AnonlabError(
                f"perturbation key '{where}' is damaged ({exc!s}): use the "
                "key file exactly as 'anonlab perturb' wrote it"
            ) from None
        key.validate(where)
        if (data["version"] == KEY_VERSION) != (key.noise_stream == "blocked"):
            raise AnonlabError(
                f"perturbation key '{where}' is inconsistent: version "
                f"{data['version']} with noise stream '{key.noise_stream}'; use "
                "the key file exactly as 'anonlab perturb' wrote it"
            )
        check_digest(data, where)
        return key

    def validate(self, where: str = "key") -> None:
        """Refuse an inconsistent key (shapes, partition, orthogonality, method)."""
        problem = self._problem()
        if problem:
            raise AnonlabError(
                f"perturbation key '{where}' is inconsistent: {problem}; use "
                "the key file exactly as 'anonlab perturb' wrote it"
            )

    def _problem(self) -> str | None:
        """The first inconsistency of the key, or None."""
        if self.method not in METHODS:
            return f"unknown method '{self.method}'"
        if (
            len(self.columns) < 2
            or len(self.integer) != len(self.columns)
            or len(set(self.columns)) != len(self.columns)
        ):
            return "column list is malformed"
        seen: list[str] = [c for b in self.blocks for c in b.columns]
        if sorted(seen) != sorted(self.columns):
            return "its blocks do not cover each column exactly once"
        for b in self.blocks:
            if not is_orthogonal(b.matrix, len(b.columns)):
                return f"the matrix of block {list(b.columns)} is not orthogonal"
        if np.any(self.stds <= 0) or self.records < 1:
            return "deviations or record count are not positive"
        if np.any(self.release_stds < 0):
            return "its release fingerprint has a negative deviation"
        if not (np.isfinite(self.noise_scale) and self.noise_scale >= 0):
            return f"its noise scale {self.noise_scale} is not a number >= 0"
        if self.noise_stream not in NOISE_STREAMS:
            return f"its noise stream '{self.noise_stream}' is unknown"
        return self._structure_problem()

    def _structure_problem(self) -> str | None:
        """The method's own shape: pairs/triples (obt, rbt) or one block; gdp's extras."""
        if self.method in ("obt", "rbt"):
            if any(len(b.columns) not in (2, 3) for b in self.blocks):
                return f"a {self.method} key mixes columns in pairs or triples only"
        elif len(self.blocks) != 1:
            return f"a {self.method} key has one block over all columns"
        if self.method in ORTHOGONAL:
            if self.translation is not None or self.noise_scale != 0 or self.noise_seed is not None:
                return f"a {self.method} key has no translation or noise"
        elif self.translation is None or (self.noise_scale > 0 and self.noise_seed is None):
            return "a gdp key needs its translation and, with noise, the noise seed"
        return None

    def check_columns(self, names: list[str], where: str) -> None:
        """Refuse a release that lacks one of the key's columns."""
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise AnonlabError(
                f"the key does not match '{where}': it has no column "
                f"'{missing[0]}'; give the release this key was written with"
            )

    def check_release(self, values: FloatArray, where: str) -> None:
        """Refuse released values this key was not made for (records, fingerprint)."""
        means, stds = fingerprint(values)
        self.check_fingerprint(values.shape[0], means, stds, where)

    def check_fingerprint(
        self, records: int, means: FloatArray, stds: FloatArray, where: str
    ) -> None:
        """Refuse a release of other ``records`` or whose column ``means`` and ``stds``
        (population deviations) are not the release fingerprint of this key."""
        if records != self.records:
            raise AnonlabError(
                f"the key does not match '{where}': the key is for "
                f"{self.records} records, the file has {records}"
            )
        scale = np.maximum(self.release_stds, 1.0)
        if not (
            np.allclose(means, self.release_means, rtol=0, atol=1e-6 * scale.max())
            and np.allclose(stds, self.release_stds, rtol=1e-6, atol=1e-9)
        ):
            col = self.columns[
                int(
                    np.argmax(np.abs(means - self.release_means) + np.abs(stds - self.release_stds))
                )
            ]
            raise AnonlabError(
                f"the key does not match '{where}': column '{col}' differs "
                "from the release the key was written with"
            )


def is_orthogonal(matrix: FloatArray, size: int) -> bool:
    """Whether ``matrix`` is a finite ``size x size`` matrix with ``|A A^T - E| <= 1e-9``."""
    if matrix.shape != (size, size) or not np.all(np.isfinite(matrix)):
        return False
    return bool(np.max(np.abs(matrix @ matrix.T - np.eye(size))) <= ORTHOGONAL_TOL)


def content_digest(content: dict[str, Any]) -> str:
    """SHA-256 (hex) of a key's content as canonical JSON: sorted keys, no spaces, UTF-8.

    Floats are written in Python's shortest round-trip form, so the digest of
    a key read back from its JSON file equals the digest computed when it was
    written.
    """
    text = json.dumps(
        content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays as plain Python values (for :func:`content_digest`)."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot encode {type(value).__name__} in a key")


def check_digest(data: dict[str, Any], where: str) -> None:
    """Refuse a key whose content does not match its digest (or a version-2 or 3 key without
    one).

    A version-1 key has no digest and is accepted (see the module docstring).
    """
    digest = data.get(DIGEST_KEY)
    if digest is None:
        if data.get("version") == 1:
            return
        raise AnonlabError(
            f"perturbation key '{where}' has no integrity digest "
            f"('{DIGEST_KEY}'): use the key file exactly as 'anonlab perturb' "
            "wrote it"
        )
    content = {k: v for k, v in data.items() if k != DIGEST_KEY}
    if not isinstance(digest, str) or digest != content_digest(content):
        raise AnonlabError(
            f"perturbation key '{where}' was changed after it was written (its "
            "content does not match its SHA-256 digest): use the key file "
            "exactly as 'anonlab perturb' wrote it"
        )


def centred_moments(
    values: FloatArray, overwrite: bool = False
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Centred values, column means and population deviations, in one pass each.

    Faster than ``ndarray.std`` on the Fortran-ordered tables used here. With
    ``overwrite`` the centring happens in ``values`` itself (no copy).
    """
    means = values.mean(axis=0)
    if overwrite:
        values -= means
        centred = values
    else:
        centred = values - means
    stds = np.sqrt(np.einsum("ij,ij->j", centred, centred) / values.shape[0])
    return centred, means, stds


NOISE_CHUNK = 65_536
#: rows of one block of the blocked noise stream: rows ``[j B, (j + 1) B)`` draw from
#: ``default_rng([seed, j])``
NOISE_BLOCK = 65_536


def add_noise(
    values: FloatArray,
    seed: int,
    scale: float,
    sign: float = 1.0,
    *,
    blocked: bool = False,
    first_row: int = 0,
) -> None:
    """Add ``sign * scale * N(0, 1)`` draws to ``values`` in place, record by record.

    ``blocked``: global row ``r = first_row + i`` of block ``j = r // NOISE_BLOCK``
    takes its ``d`` draws from ``default_rng([seed, j])``, at row ``r - j B`` of
    that generator's row-major stream. A run of rows starting anywhere (an
    engine's piece, given its ``first_row``) thus draws the noise of the whole
    table's run, which lets the engines add and remove it piece by piece.
    Without ``blocked`` (keys written before blocks existed), the draws fill the
    records in row-major order from ``default_rng(seed)``, generated in chunks
    of rows; chunked draws of a generator continue one stream, so the noise is
    the same as one draw of shape ``values.shape`` (``first_row`` must be 0).
    Either way no second full-size array is needed. ``sign=0`` overwrites
    ``values`` with the noise itself.
    """
    n, d = values.shape
    if blocked:
        _add_blocked_noise(values, seed, scale, sign, first_row)
        return
    if first_row:
        raise ValueError("the single noise stream starts at the first row of the table")
    gen = np.random.default_rng(seed)
    for start in range(0, n, NOISE_CHUNK):
        stop = min(n, start + NOISE_CHUNK)
        _add_draw(values, slice(start, stop), gen.standard_normal((stop - start, d)), scale, sign)


def _add_blocked_noise(
    values: FloatArray, seed: int, scale: float, sign: float, first_row: int
) -> None:
    """:func:`add_noise` of the blocked stream: each block's generator drawn up to the last
    row needed (the first rows of a longer draw are the same draws)."""
    n, d = values.shape
    row = first_row
    while row < first_row + n:
        block = row // NOISE_BLOCK
        start = block * NOISE_BLOCK
        stop = min(first_row + n, start + NOISE_BLOCK)
        draw = np.random.default_rng([seed, block]).standard_normal((stop - start, d))
        _add_draw(
            values, slice(row - first_row, stop - first_row), draw[row - start :], scale, sign
        )
        row = stop


def _add_draw(values: FloatArray, rows: slice, draw: FloatArray, scale: float, sign: float) -> None:
    """``values[rows] += sign * scale * draw`` (``sign=0``: ``values[rows] = scale * draw``)."""
    draw *= scale
    if sign == 0.0:
        values[rows] = draw
    elif sign > 0:
        values[rows] += draw
    else:
        values[rows] -= draw


def fingerprint(values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Column means and deviations of a release (from sums of squares: no copy)."""
    n = values.shape[0]
    means = values.mean(axis=0)
    squares = np.einsum("ij,ij->j", values, values) / n
    return means, np.sqrt(np.maximum(squares - means * means, 0.0))


def _vector(values: Any, d: int) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (d,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"expected {d} finite numbers")
    return arr
