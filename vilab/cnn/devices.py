"""Devices: what JAX runs on, and sharding of a minibatch over all local devices.

The training code is device-agnostic: it runs on whatever ``jax.devices()`` offers (CPU here;
``pip install .[gpu]`` gives CUDA). With more than one local device the minibatch is split
along its first axis over a 1-D mesh named "data" (``jax.sharding.NamedSharding``) and the
variational parameters are replicated, so a multi-GPU machine is used without code changes;
with one device nothing is sharded. The mesh spans ``jax.devices()``: after
``jax.distributed.initialize`` (:mod:`vilab.cnn.distributed`) those are the devices of every
process, on every host.
"""

from __future__ import annotations

import platform

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["device_info", "device_label", "data_mesh", "batch_sharding", "replicated", "check_batch_size", "put_batch",
           "put_replicated"]


def device_info() -> dict:
    """{'platform', 'kind', 'count', 'devices', 'jax', 'host', 'processor', 'processes'} for the local
    devices ('processes': how many processes share the work, 1 without ``jax.distributed``)."""
    devs = jax.local_devices()
    return {
        "platform": devs[0].platform,
        "kind": getattr(devs[0], "device_kind", devs[0].platform),
        "count": len(devs),
        "devices": [str(d) for d in devs],
        "jax": jax.__version__,
        "host": platform.node(),
        "processor": platform.processor() or platform.machine(),
        "processes": jax.process_count(),
    }


def device_label() -> str:
    """One line, e.g. '1 x cpu (jax 0.10.0)' or '8 x NVIDIA H100 80GB HBM3 (gpu, jax ...)'."""
    i = device_info()
    kind = i["kind"] if i["kind"] != i["platform"] else i["platform"]
    return f"{i['count']} x {kind} ({i['platform']}, jax {i['jax']})"


def data_mesh() -> Mesh | None:
    """A 1-D mesh ('data',) over all devices (every process's, under ``jax.distributed``), or None
    with a single device."""
    devs = jax.devices()
    if len(devs) < 2:
        return None
    return Mesh(np.asarray(devs), ("data",))


def batch_sharding(mesh: Mesh | None):
    """Sharding of arrays whose first axis is the batch (None: no sharding)."""
    return None if mesh is None else NamedSharding(mesh, PartitionSpec("data"))


def replicated(mesh: Mesh | None):
    """Replicated sharding (parameters, optimizer state), or None without a mesh."""
    return None if mesh is None else NamedSharding(mesh, PartitionSpec())


def check_batch_size(batch_size: int, mesh: Mesh | None) -> int:
    """The batch must split evenly over the devices of the mesh."""
    n = 1 if mesh is None else mesh.devices.size
    if int(batch_size) % n:
        raise ValueError(f"The batch size {batch_size} must be a multiple of the number of devices ({n}).")
    return int(batch_size)


def put_batch(x, mesh: Mesh | None):
    """Move an array to the devices: split along axis 0 over the mesh, else onto the default device."""
    if mesh is None:
        return jax.device_put(x)
    return jax.device_put(x, batch_sharding(mesh))


def put_replicated(x, mesh: Mesh | None):
    """Copy an array (or a pytree of arrays) to every device of the mesh; onto the default device
    without one. Across processes each process passes its own identical copy: built shard by shard
    (``jax.make_array_from_callback``), since ``jax.device_put``'s check that the copies agree
    fails on NaN entries (NaN != NaN), such as a state's not-yet-computed ELBO."""
    if mesh is None:
        return jax.device_put(x)
    sh = replicated(mesh)
    if jax.process_count() == 1:
        return jax.device_put(x, sh)

    def one(a):
        if isinstance(a, jax.Array) and a.sharding.is_equivalent_to(sh, a.ndim):
            return a
        a = np.asarray(a)
        return jax.make_array_from_callback(a.shape, sh, lambda idx: a[idx])

    return jax.tree_util.tree_map(one, x)
