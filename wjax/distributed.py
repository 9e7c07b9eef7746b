"""``jax.distributed``: one process per host, collectives across processes over MPI.

``jax.distributed.initialize()`` in every process of an MPI job (``mpiexec -n 2 python
train.py``; mpi4py with an MPI such as the ``mpich`` wheel) makes the device list global:
process ``p``'s devices follow process ``p - 1``'s, each process drives only its own
(``jax.local_devices()``), and ``jax.devices()`` lists them all, so a mesh spans every host.
A ``shard_map`` runs its body on each process' devices; its collectives exchange the
host-staged blocks of every device by ``MPI_Allgather`` (``wjax/_src/spmd.py``).  There is no
network layer of wjax's own: MPI carries every byte.  Call it before any other use of wjax.
"""
from __future__ import annotations

from ._src import array as _array
from ._src import spmd as _spmd

_state: dict = {"comm": None}


class MPIComm:
    """The communicator ``wjax/_src/spmd.py`` exchanges host blocks through."""

    def __init__(self, comm):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def allgather(self, obj):
        return self.comm.allgather(obj)

    def barrier(self):
        self.comm.Barrier()


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               coordinator_bind_address: str | None = None, **kwargs) -> None:
    """Joins the MPI job this process was started in (``mpiexec``): ``num_processes`` and
    ``process_id``, when given, must match MPI's size and rank; ``coordinator_address`` is
    not needed (MPI's launcher connects the processes)."""
    if _state["comm"] is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(
            "jax.distributed.initialize needs mpi4py and an MPI library (for example "
            "`pip install mpi4py mpich`) and a launcher such as `mpiexec -n 2 python ...`"
        ) from e
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if num_processes is not None and int(num_processes) != size:
        raise ValueError(f"num_processes={num_processes} but the MPI job has {size} processes")
    if process_id is not None and int(process_id) != rank:
        raise ValueError(f"process_id={process_id} but this is MPI rank {rank}")
    local = _array.all_devices()
    if local_device_ids is not None:
        ids = [int(i) for i in (local_device_ids if isinstance(local_device_ids, (list, tuple))
                                else [local_device_ids])]
        local = [local[i] for i in ids]
    kinds = comm.allgather([(d.device_kind, d.backend, d.adapter_type) for d in local])
    _array.set_process_layout(rank, size, kinds)
    mpi = MPIComm(comm)
    _spmd.comm[0] = mpi
    _state["comm"] = mpi


def is_initialized() -> bool:
    return _state["comm"] is not None


def shutdown() -> None:
    """Leaves the job: this process alone again (MPI itself is finalized at exit)."""
    if _state["comm"] is None:
        return
    _state["comm"].barrier()
    _state["comm"] = None
    _spmd.comm[0] = _spmd.LocalComm()
    _array.set_process_layout(0, 1, [[(d.device_kind, d.backend, d.adapter_type)
                                      for d in _array.local_devices()]])


__all__ = ["initialize", "is_initialized", "shutdown"]
