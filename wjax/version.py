"""``jax.version``: the JAX API level wjax mirrors, and wjax's own version.

Libraries branch on ``jax.__version__`` / ``jax.__version_info__`` (optax, flax, equinox do), so
those report the JAX release whose API wjax follows; ``wjax_version`` is wjax's own."""
__version__ = "0.10.2"
_version = __version__
_version_as_tuple = tuple(int(p) for p in __version__.split("."))
wjax_version = "0.1.0"
__version_info__ = _version_as_tuple
_minimum_jaxlib_version = __version__
_minimum_jaxlib_version_info = _version_as_tuple
