"""Data-parallel VI training over several processes or hosts with ``jax.distributed``.

:func:`vilab.cnn.train.vi_train` splits every minibatch over the devices of one mesh
(:func:`vilab.cnn.devices.data_mesh`, a 1-D mesh named "data" over ``jax.devices()``). After
:func:`initialize` that list holds the devices of *every* process, so the same code trains on a
cluster: each process holds the whole data set (replicated), computes the gradient of its part of
each minibatch, and XLA's collectives sum the parts (NCCL between GPUs; Gloo between CPU processes),
so every process ends with the same parameters as one process on the same data and keys (up to the
order of the floating-point sums).

On one machine, two CPU processes (what the tests run)::

    python -m vilab.cnn.distributed --num-processes 2 --process-id 0 --coordinator 127.0.0.1:12355 --out p0.npz &
    python -m vilab.cnn.distributed --num-processes 2 --process-id 1 --coordinator 127.0.0.1:12355 --out p1.npz

On a cluster, one process per host (or per GPU), the same command with the first host's address as
the coordinator and each process's own ``--process-id`` (0 .. N-1); under SLURM or Open MPI,
``jax.distributed.initialize()`` finds all three by itself, so ``--coordinator auto`` leaves them out::

    srun --nodes 4 --ntasks-per-node 1 python -m vilab.cnn.distributed --coordinator auto --data mnist \\
        --model lenet5 --optimizer snngm --epochs 30 --batch 128 --out run.npz

The batch size must be a multiple of the total number of devices.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import jax
import numpy as np

__all__ = ["initialize", "train", "main"]


def initialize(coordinator: str | None, num_processes: int | None = None, process_id: int | None = None) -> dict:
    """Join the cluster: ``jax.distributed.initialize`` with Gloo as the CPU collectives (so that
    CPU-only processes can sum across each other). ``coordinator`` "host:port" of process 0, or
    None / "auto" to let JAX read them from SLURM / Open MPI. Call it before any other JAX
    computation. Returns {'process', 'processes', 'devices', 'local_devices'}."""
    if num_processes is not None and int(num_processes) < 1:
        raise ValueError("The number of processes must be at least 1.")
    if process_id is not None and num_processes is not None and not 0 <= int(process_id) < int(num_processes):
        raise ValueError(f"The process id must be between 0 and {int(num_processes) - 1}; got {process_id}.")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if coordinator in (None, "auto"):
        jax.distributed.initialize()
    else:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=int(num_processes),
                                   process_id=int(process_id))
    return {"process": jax.process_index(), "processes": jax.process_count(), "devices": jax.device_count(),
            "local_devices": jax.local_device_count()}


def train(data_name: str = "digits", model: str | None = None, optimizer: str = "snngm", *, epochs: int = 1,
          batch: int = 32, n_train: int | None = None, seed: int = 0, alpha: float | None = None):
    """One :func:`vilab.cnn.train.vi_train` run on the devices of all processes; returns its Trace."""
    from vilab.cnn import data as cdata
    from vilab.cnn import models
    from vilab.cnn import train as ctrain
    from vilab.core import as_key

    d = cdata.load(data_name)
    if n_train is not None:
        d = d.subset(int(n_train), None)
    net = models.build(model or models.models_for(d.shape)[0], d.shape)
    return ctrain.vi_train(net, d, optimizer, key=as_key(seed), alpha=alpha, epochs=epochs, batch_size=batch,
                           elbo_draws=4, eval_samples=4)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coordinator", default=None,
                   help="host:port of process 0, or 'auto' (SLURM / Open MPI); leave out for a single process")
    p.add_argument("--num-processes", type=int, default=1)
    p.add_argument("--process-id", type=int, default=0)
    p.add_argument("--data", default="digits", help="digits, mnist, or the path of a .npz file")
    p.add_argument("--model", default=None, help="default: the first model built for the data's image size")
    p.add_argument("--optimizer", default="snngm")
    p.add_argument("--alpha", type=float, default=None)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=32, help="a multiple of the total number of devices")
    p.add_argument("--n-train", type=int, default=None, help="use the first N training images")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the final parameters and metrics to this .npz")
    args = p.parse_args(argv)
    try:
        if args.coordinator is not None or args.num_processes > 1:
            who = initialize(args.coordinator, args.num_processes, args.process_id)
        else:
            who = {"process": 0, "processes": 1, "devices": jax.device_count(),
                   "local_devices": jax.local_device_count()}
        t0 = time.perf_counter()
        tr = train(args.data, args.model, args.optimizer, epochs=args.epochs, batch=args.batch,
                   n_train=args.n_train, seed=args.seed, alpha=args.alpha)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    lam = np.asarray(tr.state.lam)
    summary = dict(who, status=tr.status, seconds=time.perf_counter() - t0,
                   test_err=float(tr.extra["test_err"][-1]), final_elbo=float(tr.extra["final_elbo"]),
                   steps=int(tr.info["elbo"].shape[0]))
    print(json.dumps(summary), flush=True)
    if args.out:
        np.savez(args.out, lam=lam, elbo=np.asarray(tr.info["elbo"]), **{k: np.asarray(v) for k, v in summary.items()
                                                                        if not isinstance(v, str)},
                 status=np.asarray(tr.status))
    if jax.process_count() > 1:
        jax.distributed.shutdown()


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
