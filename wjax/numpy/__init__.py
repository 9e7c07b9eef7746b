"""wjax.numpy: JAX's ``jax.numpy`` on WebGPU, one module per topic (docs/DESIGN.md):

    _util         argument checks, promotion, broadcasting, result_type
    creation      array, asarray, zeros/ones/full/empty(_like), arange, eye, tri, ...
    scalars       scalar types (jnp.float32), dtype names, constants, finfo/iinfo
    ufuncs        elementwise math, comparisons, logic, bits, rounding, clip
    shapes        reshape, transpose, joins and splits, flips, rolls, tiles, diagonals, take
    reductions    sum/prod/max/mean/var/..., NaN-ignoring and cumulative forms, quantiles
    grids         linspace, logspace, geomspace, meshgrid, indices, vander
    products      dot, matmul, tensordot, outer, kron, cross, einsum
    sorting       sort/argsort/partition, searchsorted, nonzero/argwhere/where, histograms
    manipulation  pad, repeat, compress, extract
    setops        unique, union1d, intersect1d, setdiff1d, setxor1d, isin
    indexing      x[...] and x.at[...]
    linalg        jnp.linalg (decompositions with JAX's derivative rules; the algorithms in
                  decompositions)
    index_tricks  block, r_/c_/s_, ix_, mgrid/ogrid, fromfunction, place/put, load/save, repr
    numerics      windows, cov/corrcoef, gradient, histogramdd, bit packing, polynomials
    ufunc_objects jnp.ufunc (reduce/accumulate/outer/at/reduceat): jnp.add, jnp.maximum, ...
    vectorization vectorize, frompyfunc, apply_along_axis (on vmap)
    fft           jnp.fft (over lax.fft)
    interop       from_dlpack, __array_namespace_info__
    array_methods the operators and methods of Array and Tracer, installed from here
"""
import sys as _sys

from . import array_methods as _array_methods
from . import _util, creation, grids, manipulation, products, reductions, scalars, setops
from . import shapes, sorting, ufuncs
from . import indexing, interop, linalg, fft
from . import index_tricks, numerics, ufunc_objects, vectorization
from ._util import *
from .creation import *
from .scalars import *
from .ufuncs import *
from .shapes import *
from .reductions import *
from .grids import *
from .products import *
from .sorting import *
from .manipulation import *
from .setops import *
from .interop import __array_namespace_info__, from_dlpack
from .index_tricks import *
from .numerics import *
from .ufunc_objects import *
from .vectorization import *

__array_api_version__ = "2023.12"

__all__ = [n for m in (_util, creation, scalars, ufuncs, shapes, reductions, grids, products,
                       sorting, manipulation, setops, index_tricks, numerics, ufunc_objects,
                       vectorization)
           for n in m.__all__]
__all__ += ["__array_api_version__", "__array_namespace_info__", "from_dlpack"]

_array_methods.install_all(_sys.modules[__name__])   # operators and methods of Array and Tracer
