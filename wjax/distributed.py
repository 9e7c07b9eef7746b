"""``jax.distributed``: one process per host, collectives across processes over MPI.

Filled in below (``initialize``)."""
