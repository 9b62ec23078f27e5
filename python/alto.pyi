"""ALTO sparse tensors (Helal et al., ICS 2021): MTTKRP, CP-ALS and CP-APR on one compact,
linearized copy of a sparse tensor, with the GIL released."""

import os
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

_Path = Union[str, "os.PathLike[str]"]
_Sync = Literal["auto", "pull", "atomic", "flagged"]
_Float2D = npt.NDArray[np.float64]
_Init = Union[Literal["random"], Any]

class SparseTensor:
    """A sparse tensor in the ALTO format. Build one with `read_tns`, `load`, `gen` or
    `SparseTensor.from_coo`. Duplicate coordinates are summed; the tensor is immutable."""

    @staticmethod
    def from_coo(
        indices: Any,
        values: Optional[npt.ArrayLike] = None,
        shape: Optional[Sequence[int]] = None,
        *,
        threads: Optional[int] = None,
    ) -> "SparseTensor":
        """Coordinates `(nnz, N)` or `(N, nnz)` (0-based ints), `nnz` finite real values and
        the `N` dims; or a `scipy.sparse` matrix alone (order 2)."""
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def nnz(self) -> int:
        """Stored nonzeros, after summing duplicates."""
    @property
    def partitions(self) -> int:
        """Segments of the linearized nonzeros (threads at construction)."""
    def info(self) -> Dict[str, Any]:
        """The fields of `alto info --json`."""
    def save(self, path: _Path) -> None:
        """Writes `.alto` (binary) or `.tns` (FROSTT text), by extension."""
    def to_coo(self) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """`(indices (nnz, N) int64 0-based, values float64)` in ALTO order."""
    def mttkrp(
        self,
        factors: Sequence[npt.ArrayLike],
        mode: int,
        *,
        threads: Optional[int] = None,
        sync: _Sync = "auto",
        kernel: str = "auto",
    ) -> _Float2D:
        """MTTKRP of `mode`: float64 `(I_mode, R)`."""

class CPTensorResult:
    """A fitted CP model, the pair `(weights, factors)` TensorLy takes as a CP tensor: the base
    class of `CPResult` and `APRResult` (not made directly)."""

    @property
    def weights(self) -> npt.NDArray[np.float64]: ...
    @property
    def factors(self) -> List[_Float2D]: ...
    @property
    def rank(self) -> int: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    def to_tensorly(self) -> Any:
        """A `tensorly.cp_tensor.CPTensor` (needs tensorly)."""
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: Literal[0, -2]) -> npt.NDArray[np.float64]: ...
    @overload
    def __getitem__(self, index: Literal[1, -1]) -> List[_Float2D]: ...
    def __iter__(self) -> Iterator[Any]: ...

class CPResult(CPTensorResult):
    """A fitted CP model (`cp_als`), the factors' columns normalized into the weights: the
    pair `(weights, factors)` TensorLy takes as a CP tensor, with the fit history and the time
    of every iteration."""

    @property
    def fit(self) -> float: ...
    @property
    def fit_history(self) -> List[float]: ...
    @property
    def iteration_times(self) -> List[float]: ...
    @property
    def mttkrp_times(self) -> List[float]: ...
    @property
    def n_iter(self) -> int: ...
    @property
    def converged(self) -> bool: ...
    @property
    def norm_x(self) -> float: ...
    @property
    def history(self) -> List[Dict[str, Any]]:
        """`iterations[]` of `alto cpd --json`."""

class APRResult(CPTensorResult):
    """A fitted Poisson CP model (`cp_apr`), every factor column summing to 1: the pair
    `(weights, factors)` TensorLy takes as a CP tensor, with the log-likelihood, KKT violation
    and time of every outer iteration."""

    @property
    def loglik(self) -> float:
        """The log-likelihood after the last iteration (up to `-sum log(v!)`)."""
    @property
    def loglik_history(self) -> List[float]:
        """The log-likelihood after each outer iteration; never decreasing."""
    @property
    def kkt_history(self) -> List[float]:
        """The largest KKT violation over modes, per iteration."""
    @property
    def inner_iters(self) -> List[int]:
        """Inner iterations over all modes, per iteration."""
    @property
    def iteration_times(self) -> List[float]: ...
    @property
    def phi_times(self) -> List[float]: ...
    @property
    def n_iter(self) -> int: ...
    @property
    def converged(self) -> bool: ...
    @property
    def phi_kernels(self) -> List[str]:
        """The Phi kernel of each mode (`phi_pull_fused`, ...)."""
    @property
    def history(self) -> List[Dict[str, Any]]:
        """`iterations[]` of `alto cpd --model apr --json`."""

def read_tns(
    path: _Path, *, dims: Optional[Sequence[int]] = None, threads: Optional[int] = None
) -> SparseTensor:
    """Reads a FROSTT `.tns` file (1-based)."""

def load(path: _Path, *, threads: Optional[int] = None) -> SparseTensor:
    """Reads a binary `.alto` file."""

def cp_als(
    tensor: SparseTensor,
    rank: int,
    *,
    n_iter_max: int = 50,
    tol: float = 1e-5,
    init: Optional[_Init] = None,
    random_state: Optional[int] = None,
    threads: Optional[int] = None,
    verbose: bool = False,
    sync: _Sync = "auto",
    kernel: str = "auto",
) -> CPResult:
    """CP decomposition by alternating least squares."""

def cp_apr(
    tensor: SparseTensor,
    rank: int,
    *,
    n_iter_max: int = 1000,
    inner: int = 10,
    tol: float = 1e-4,
    kappa: float = 0.01,
    kappa_tol: float = 1e-10,
    epsilon: float = 1e-10,
    init: Optional[_Init] = None,
    random_state: Optional[int] = None,
    threads: Optional[int] = None,
    verbose: bool = False,
    sync: _Sync = "auto",
    kernel: str = "auto",
) -> APRResult:
    """CP-APR: a nonnegative CP model of a count tensor by maximizing the Poisson
    log-likelihood (Chi and Kolda's multiplicative updates). `kernel`: "auto", "fused",
    "cached" or an MTTKRP kernel name. Raises ValueError for negative values."""

@overload
def gen(
    kind: Literal["lowrank"],
    nnz: int,
    *,
    seed: int = 0,
    dims: Optional[Sequence[int]] = None,
    rank: Optional[int] = None,
    cv_slices: float = 1.0,
    cv_fibers: float = 1.0,
    keep_dims: bool = False,
    return_factors: Literal[True],
    output: Optional[_Path] = None,
    threads: Optional[int] = None,
) -> Tuple[SparseTensor, List[_Float2D]]: ...
@overload
def gen(
    kind: str,
    nnz: int,
    *,
    seed: int = 0,
    dims: Optional[Sequence[int]] = None,
    rank: Optional[int] = None,
    cv_slices: float = 1.0,
    cv_fibers: float = 1.0,
    keep_dims: bool = False,
    return_factors: Literal[False] = False,
    output: Optional[_Path] = None,
    threads: Optional[int] = None,
) -> SparseTensor:
    """A synthetic tensor, as `alto gen`."""
