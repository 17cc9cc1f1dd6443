"""Data-parallel training of a small classifier, three ways, and the single-process run it must equal.

Every rank holds the whole model, takes its own slice of each global batch of the handwritten-digits set
(scikit-learn's bundled copy: 1,797 8x8 images, no download), computes gradients on it, and the ranks average
their gradients before the optimizer step, so every rank applies the same update:

* ``naive``: after ``backward()``, one blocking all-reduce per parameter tensor (here to learn from);
* ``bucketed``: gradients are packed into buckets of ``bucket_bytes``; a hook fires as soon as backward has
  produced a whole bucket and starts an asynchronous all-reduce, which overlaps with the rest of backward;
* ``ddp``: PyTorch's ``DistributedDataParallel`` (the same idea, in C++; Li et al. 2020).

Equal local batches make the average of the local mean losses the mean loss of the global batch, so the result
equals a single process training on the global batch (:func:`train_single`), up to float rounding. From a
terminal: ``torchrun --standalone --nproc-per-node 2 -m aihw.parallel.data_parallel --mode bucketed``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal, get_args

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from aihw._validate import require_choice, require_positive
from aihw.parallel.launch import LaunchConfig, RankContext, launch, launch_each, run_under_torchrun
from aihw.runtime.device import pick_backend
from aihw.runtime.tensors import grad_of, tensor_bytes
from aihw.runtime.timing import synced_clock

Mode = Literal["naive", "bucketed", "ddp"]
MODES: tuple[str, ...] = get_args(Mode)
CPU = torch.device("cpu")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class DPConfig:
    """One data-parallel training run on the digits set."""

    mode: str = "bucketed"  # "naive", "bucketed" or "ddp"
    steps: int = 30  # optimizer steps
    global_batch: int = 96  # samples per step over all ranks; must be divisible by the world size
    hidden: int = 256  # width of the two hidden layers of the MLP 64 -> hidden -> hidden -> 10
    lr: float = 0.05  # SGD learning rate
    momentum: float = 0.9  # SGD momentum
    bucket_bytes: int = 64 * 1024  # bucket size of the bucketed mode and of DDP, bytes
    dtype: str = "float32"  # "float32" or "float64" (float64 shrinks rounding differences)
    seed: int = 0  # model initialisation and batch order

    def __post_init__(self) -> None:
        require_choice("mode", self.mode, MODES)
        require_choice("dtype", self.dtype, DTYPES)
        for name in ("steps", "global_batch", "hidden", "bucket_bytes"):
            require_positive(name, getattr(self, name), integer=True)
        require_positive("lr", self.lr)
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")

    def local_batch(self, world_size: int) -> int:
        """Samples per rank per step; ValueError if ``global_batch`` does not split evenly."""
        if self.global_batch % world_size:
            raise ValueError(f"global_batch={self.global_batch} must be divisible by world_size={world_size} "
                             "so every rank gets an equal slice")
        return self.global_batch // world_size


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits  # bundled with scikit-learn: no download

    data = load_digits()
    return torch.tensor(data.data / 16.0, dtype=torch.float64), torch.tensor(data.target, dtype=torch.long)


def digits_batch(step: int, config: DPConfig, *, rank: int = 0, world_size: int = 1
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s slice of the global batch of ``step``: the same global batch on every rank."""
    features, labels = _digits()
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(config.seed * 100_003 + step))
    local = config.local_batch(world_size)
    index = order[: config.global_batch][rank * local:(rank + 1) * local]
    return features[index].to(DTYPES[config.dtype]), labels[index]


def make_model(config: DPConfig) -> nn.Sequential:
    """MLP 64 -> hidden -> hidden -> 10, initialised from ``config.seed`` (identical on every rank)."""
    torch.manual_seed(config.seed)
    model = nn.Sequential(nn.Linear(64, config.hidden), nn.ReLU(), nn.Linear(config.hidden, config.hidden),
                          nn.ReLU(), nn.Linear(config.hidden, 10))
    return model.to(DTYPES[config.dtype])


def all_reduce_gradients(model: nn.Module) -> None:
    """Naive synchronisation: one blocking all-reduce per gradient, then divide by the world size."""
    world_size = dist.get_world_size()
    for param in model.parameters():
        if param.grad is not None:
            dist.all_reduce(param.grad)
            param.grad /= world_size


class BucketedGradSync:
    """Start an asynchronous all-reduce of each bucket as soon as backward has produced its last gradient.

    Buckets are filled in reverse parameter order, roughly the order backward produces gradients in.
    Call :meth:`finish` after ``backward()``: it waits for the pending all-reduces and writes the averaged
    gradients back.
    """

    def __init__(self, model: nn.Module, bucket_bytes: int) -> None:
        self.buckets: list[list[nn.Parameter]] = [[]]
        size = 0
        for param in reversed([p for p in model.parameters() if p.requires_grad]):
            if self.buckets[-1] and size + tensor_bytes(param) > bucket_bytes:
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(param)
            size += tensor_bytes(param)
        self.bucket_of = {id(p): i for i, bucket in enumerate(self.buckets) for p in bucket}
        self.ready = [0] * len(self.buckets)
        self.pending: list[tuple[int, torch.Tensor, dist.Work]] = []
        self.hooks = [p.register_post_accumulate_grad_hook(self._on_grad_ready)
                      for bucket in self.buckets for p in bucket]

    def _on_grad_ready(self, param: torch.Tensor) -> None:
        index = self.bucket_of[id(param)]
        self.ready[index] += 1
        if self.ready[index] == len(self.buckets[index]):
            flat = torch.cat([grad_of(p).reshape(-1) for p in self.buckets[index]])
            handle = dist.all_reduce(flat, async_op=True)
            assert handle is not None  # async_op=True always returns a handle
            self.pending.append((index, flat, handle))

    def finish(self) -> None:
        """Wait for every bucket's all-reduce, average, and copy the result into ``param.grad``."""
        world_size = dist.get_world_size()
        for index, flat, handle in self.pending:
            handle.wait()
            flat /= world_size
            offset = 0
            for param in self.buckets[index]:
                grad_of(param).copy_(flat[offset:offset + param.numel()].view_as(param))
                offset += param.numel()
        if len(self.pending) != len(self.buckets):
            raise RuntimeError(f"only {len(self.pending)} of {len(self.buckets)} buckets were reduced: "
                               "did every parameter receive a gradient?")
        self.pending, self.ready = [], [0] * len(self.buckets)


def _train(model: nn.Module, config: DPConfig, *, rank: int, world_size: int, sync,
           device: torch.device = CPU, progress: Callable[[str], None] | None = None) -> dict:
    """The loop every mode shares; ``sync()`` runs between backward and the optimizer step; ``progress`` is
    told each finished step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    losses, compute_s, comm_s, step_s = [], [], [], []
    clock = synced_clock(device)  # waits for the GPU before each read: NCCL and backward are asynchronous
    for step in range(config.steps):
        x, y = (t.to(device) for t in digits_batch(step, config, rank=rank, world_size=world_size))
        start = clock()
        optimizer.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        backward_done = clock()
        sync()
        synced = clock()
        optimizer.step()
        done = clock()
        losses.append(float(loss.item()))
        if progress is not None:
            progress(f"step {step}")
        compute_s.append(backward_done - start)
        comm_s.append(synced - backward_done)
        step_s.append(done - start)
    return {"losses": losses, "compute_s": compute_s, "comm_s": comm_s, "step_s": step_s}


def train_worker(ctx: RankContext, config: DPConfig) -> dict:
    """Train on ``ctx.world_size`` ranks with ``config.mode``; returns this rank's losses, times and weights.

    ``comm_s`` is the communication left exposed after backward (in ``bucketed`` mode, what did not overlap;
    in ``ddp`` mode DDP's own wait happens inside backward, so it shows up in ``compute_s``).
    """
    model = make_model(config).to(ctx.device)
    net: nn.Module = model
    sync: Callable[[], None] = functools.partial(all_reduce_gradients, model)
    if config.mode == "bucketed":
        sync = BucketedGradSync(model, config.bucket_bytes).finish
    elif config.mode == "ddp":
        ids = [ctx.device] if ctx.device.type == "cuda" else None
        net = nn.parallel.DistributedDataParallel(model, device_ids=ids, bucket_cap_mb=config.bucket_bytes / 2**20)
        sync = lambda: None  # noqa: E731  (DDP averages inside backward)
    result = _train(net, config, rank=ctx.rank, world_size=ctx.world_size, sync=sync, device=ctx.device,
                    progress=ctx.progress)
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return {"rank": ctx.rank, "world_size": ctx.world_size, "mode": config.mode, "backend": ctx.backend,
            "global_batch": config.global_batch,
            "threads": torch.get_num_threads(), "state": state, "weights_sha256": weights_digest(state),
            "grad_bytes": tensor_bytes(model.parameters()), **result}


def train_single(config: DPConfig) -> dict:
    """The reference: one process, no communication, the whole global batch per step."""
    model = make_model(config)
    result = _train(model, config, rank=0, world_size=1, sync=lambda: None)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return {"rank": 0, "world_size": 1, "mode": "single", "state": state,
            "weights_sha256": weights_digest(state), **result}


def weights_digest(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 of the weights' bytes: equal digests mean bit-identical weights."""
    digest = hashlib.sha256()
    for name in sorted(state):
        digest.update(name.encode())
        digest.update(state[name].detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def _with_backend_reason(per_rank: list[dict], world_size: int, gpu_compute: bool = False) -> list[dict]:
    """Add ``backend_reason``: why NCCL or gloo was chosen (e.g. "gloo: 4 ranks but 1 GPU; ...")."""
    reason = pick_backend(world_size, gpu_compute=gpu_compute).reason
    return [dict(r, backend_reason=reason) for r in per_rank]


def run(config: DPConfig = DPConfig(), *, world_size: int = 2, timeout_s: float = 120.0,
        gpu_compute: bool = False, on_progress: Callable[[str], None] | None = None) -> list[dict]:
    """Launch :func:`train_worker` on ``world_size`` spawned ranks (one thread each); results by rank.

    ``on_progress(message)`` is called once per finished step (see :func:`aihw.parallel.launch.launch`).

    NCCL when there is a GPU per rank, else gloo; each result's ``backend_reason`` says which and why. Every
    mode communicates through all_reduce only, so ``gpu_compute=True`` is safe: with fewer GPUs than ranks the
    ranks then compute on the GPUs (round-robin) and gloo carries their CUDA gradients."""
    per_rank = launch(train_worker, config, config=LaunchConfig(world_size=world_size, timeout_s=timeout_s,
                                                                gpu_compute=gpu_compute),
                      on_progress=on_progress)
    return _with_backend_reason(per_rank, world_size, gpu_compute)


def run_modes(configs: tuple[DPConfig, ...], *, world_size: int = 2, timeout_s: float = 180.0,
              gpu_compute: bool = False) -> list[list[dict]]:
    """Launch once, train each config in turn; ``result[i][rank]`` is config i's result on ``rank``."""
    per_config = launch_each(train_worker, tuple(configs),
                             config=LaunchConfig(world_size=world_size, timeout_s=timeout_s, gpu_compute=gpu_compute))
    return [_with_backend_reason(results, world_size, gpu_compute) for results in per_config]


def summarize(per_rank: list[dict], *, skip: int = 2) -> dict:
    """Median per-step compute, exposed communication and step time (slowest rank), skipping ``skip`` warm-up
    steps; samples/s of the whole group."""
    def slowest_median(key: str) -> float:
        return max(statistics.median(r[key][skip:] or r[key]) for r in per_rank)

    step = slowest_median("step_s")
    global_batch = per_rank[0]["global_batch"] if "global_batch" in per_rank[0] else None
    return {"world_size": len(per_rank), "compute_s": slowest_median("compute_s"),
            "comm_s": slowest_median("comm_s"), "step_s": step,
            "samples_per_s": global_batch / step if global_batch else float("nan")}


def scaling_study(world_sizes: tuple[int, ...] = (1, 2, 4), *, per_rank_batch: int = 32, hidden: int = 256,
                  mode: str = "naive", steps: int = 12, timeout_s: float = 180.0, on_progress=None) -> list[dict]:
    """Weak scaling: ``per_rank_batch`` samples per rank, one launch per world size.

    Efficiency = samples/s at p ranks / (p x samples/s at 1 rank): 1.0 is perfect. ``on_progress(i, n)`` is
    called after each world size.
    """
    rows = []
    for i, world_size in enumerate(world_sizes):
        config = DPConfig(mode=mode, steps=steps, global_batch=per_rank_batch * world_size, hidden=hidden)
        rows.append(summarize(run(config, world_size=world_size, timeout_s=timeout_s)))
        if on_progress is not None:
            on_progress(i + 1, len(world_sizes))
    base = rows[0]["samples_per_s"] / rows[0]["world_size"]
    for row in rows:
        row["efficiency"] = row["samples_per_s"] / (row["world_size"] * base)
        row["label"] = f"{row['world_size']} rank{'s' if row['world_size'] > 1 else ''}"
    return rows


def _main() -> None:
    parser = argparse.ArgumentParser(description="data-parallel training of an MLP on the digits set")
    parser.add_argument("--mode", choices=MODES, default="bucketed")
    parser.add_argument("--steps", type=int, default=DPConfig.steps)
    parser.add_argument("--global-batch", type=int, default=DPConfig.global_batch)
    args = parser.parse_args()
    config = DPConfig(mode=args.mode, steps=args.steps, global_batch=args.global_batch)
    out = run_under_torchrun(train_worker, config)
    lines = []
    if out["rank"] == 0:  # e.g. "gloo: 2 ranks but 1 GPU; NCCL needs one GPU per rank; tensors stay on the CPU"
        local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", out["world_size"]))  # set by torchrun
        lines.append(f"backend {pick_backend(local_ranks).reason}")
    lines.append(f"rank {out['rank']}/{out['world_size']} mode={out['mode']} backend={out['backend']} "
                 f"loss {out['losses'][0]:.4f} -> {out['losses'][-1]:.4f} weights_sha256={out['weights_sha256']}")
    if out["rank"] == 0:
        lines.append(str({"config": asdict(config)}))
    sys.stdout.write("\n".join(lines) + "\n")  # one write: the ranks share stdout, so lines must not interleave
    sys.stdout.flush()

if __name__ == "__main__":
    _main()
